import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { openRuntime, tempDataDir, untilAsleep } from './helpers.js';

describe('inspection (serve --inspect-log)', () => {
  it('reports the XState inspection events of agent actors and their children', async () => {
    const dir = tempDataDir();
    const seen: InspectionEvent[] = [];
    const runtime = await openRuntime(dir.dir, { inspect: (event) => seen.push(event) });
    try {
      await runtime.createAgent({ agent_id: 'watched' });
      await runtime.execCommand('watched', { summary: 'x', cmd: 'true', accepts_input: false });
      await untilAsleep(runtime, 'watched');
      const actorIds = new Set(seen.filter((e) => e.type === '@xstate.actor').map((e) => (e.actorRef as { id?: string }).id));
      expect(actorIds.has('watched')).toBe(true);
      expect(actorIds.has('continuation')).toBe(true);
      const events = seen.filter((e) => e.type === '@xstate.event').map((e) => (e as { event: { type: string } }).event.type);
      expect(events).toEqual(expect.arrayContaining(['INITIALIZE', 'INITIALIZE.DONE', 'TASK.SPAWN', 'START', 'IDLE']));
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});
