import { describe, expect, it } from 'vitest';
import { eventsOfType, eventually, openRuntime, tempDataDir, untilAsleep } from './helpers.js';

describe('the continuation actor follows the runtime', () => {
  it('its wait region returns to idle once the awaited task result re-enters, and a replayed hint clears its hint region', async () => {
    const dir = tempDataDir();
    const runtime = await openRuntime(dir.dir);
    try {
      await runtime.createAgent({ agent_id: 'follower' });
      await runtime.prompt('follower', { text: '/exec-wait sleep 0.3' });
      const waiting = await eventually(async () => {
        const chart = (await runtime.getSummary('follower')).statechart['continuation'] as { wait: string; wakeHint: string } | null;
        return chart?.wait === 'waiting' ? chart : undefined;
      });
      expect(waiting.wait).toBe('waiting');
      // A hint while the agent awaits its task is stored (coalesced), then replayed once idle.
      expect((await runtime.wake('follower', { reason: 'meanwhile' })).disposition).toBe('coalesced');
      await eventually(async () => ((await eventsOfType(runtime, 'follower', 'continuation_resolved')).length >= 3 ? true : undefined));
      await untilAsleep(runtime, 'follower');
      // Asleep means passivated: the persisted actor state is reported.
      const chart = (await runtime.getSummary('follower')).statechart['continuation'] as { wait: string; wakeHint: string };
      expect(chart).toEqual({ wait: 'idle', wakeHint: 'clear' });
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});
