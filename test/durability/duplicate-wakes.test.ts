import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent, WakeResult } from '../../src/domain/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { allEvents, openRuntime, untilAsleep } from '../runtime/helpers.js';
import { readEvents } from './fixtures/data-dir.js';
import { eventually, settled, TempDirs, Workers } from './fixtures/harness.js';

/** Seed 002 acceptance 3: many duplicate wake events during sleep start exactly one activation. */

const dirs = new TempDirs();
let runtime: Runtime | undefined;
let workers: Workers | undefined;

afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  await workers?.cleanup();
  await dirs.cleanup();
});

/** Activations after event `afterSeq`: transitions into waking, and turns started. */
function activations(events: AgentEvent[], afterSeq: number): { wakings: number; turns: number; actives: number } {
  const later = events.filter((e) => e.event_seq > afterSeq);
  const transitions = later.filter((e) => e.type === 'transition_committed');
  return {
    wakings: transitions.filter((e) => e.payload['to_phase'] === 'waking').length,
    actives: transitions.filter((e) => e.payload['from_phase'] === 'waking' && e.payload['to_phase'] === 'active').length,
    turns: later.filter((e) => e.type === 'turn_started').length,
  };
}

describe('scenario 3: 100 duplicate wake events during sleep', () => {
  it('in one process, 100 concurrent wakes (API and capability URL mixed): one activation, one turn', async () => {
    const dir = await dirs.make();
    runtime = await openRuntime(dir);
    const { external_trigger } = await runtime.createAgent({ agent_id: 'dup' });
    await untilAsleep(runtime, 'dup');
    const baseline = (await allEvents(runtime, 'dup')).at(-1)?.event_seq ?? 0;
    const rt = runtime;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i): Promise<WakeResult | { disposition: string }> =>
        i % 2 === 0
          ? rt.wake('dup', { reason: 'the same upstream change', source: 'ci' })
          : rt.deliverCallback('wake_hint', external_trigger.token, { content_type: 'text/plain', body: Buffer.from('the same upstream change') }),
      ),
    );
    expect(results.filter((r) => r.disposition === 'triggered')).toHaveLength(1);
    await eventually(async () => activations(await allEvents(rt, 'dup'), baseline).turns > 0 || undefined);
    await untilAsleep(rt, 'dup');
    expect(activations(await allEvents(rt, 'dup'), baseline)).toEqual({ wakings: 1, actives: 1, turns: 1 });
  });

  it('in a worker process, 100 wake requests written at once (served concurrently): one activation, one turn', async () => {
    const dataDir = await dirs.make();
    workers = new Workers({ dataDir, nodeId: 'wakes' });
    const worker = await workers.open();
    await worker.call('createAgent', { agent_id: 'dup' });
    await settled(worker, 'dup');
    const baseline = (await readEvents(dataDir, 'dup')).at(-1)?.event_seq ?? 0;
    const replies = await Promise.all(
      Array.from({ length: 100 }, () => worker.send({ op: 'call', method: 'wake', args: ['dup', { reason: 'duplicate delivery', source: 'webhook' }] }).reply),
    );
    const dispositions = replies.map((r) => (r.ok ? (r.result as WakeResult).disposition : r.code));
    expect(dispositions.filter((d) => d === 'triggered')).toHaveLength(1);
    expect(dispositions.filter((d) => d !== 'triggered' && d !== 'coalesced')).toEqual([]);
    await eventually(async () => activations(await readEvents(dataDir, 'dup'), baseline).turns > 0 || undefined);
    await settled(worker, 'dup');
    expect(activations(await readEvents(dataDir, 'dup'), baseline)).toEqual({ wakings: 1, actives: 1, turns: 1 });
  });
});
