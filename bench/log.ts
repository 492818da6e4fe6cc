import { join } from 'node:path';
import type { Runtime } from '../src/runtime/runtime.js';
import { LowdbStore, type Lease, type NewEvent } from '../src/store/index.js';
import { Activity } from './lib/activity.js';
import { openRuntime, scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { median, pairwiseRatios } from './lib/stats.js';
import { until } from './lib/timing.js';

/**
 * Per-agent event append cost with a short and a long log, measured in the same run
 * (the short log is the baseline; runs alternate between the two agents).
 *
 * - Store: `LowdbStore.commit` of one event (and the same small doc) to an agent holding 1,000
 *   vs 100,000 events; sequential, each acknowledged after fsync.
 * - Runtime: a prompt's events appended through `Runtime` (memory store, so the disk does not
 *   hide CPU costs) to an agent whose history holds ~1,000 vs ~100,000 events, in µs per
 *   appended event; and, against the same long history, an agent created for the measurement
 *   (its first prompts): a turn must not get dearer as the agent ages. (It did, ~4× once an agent
 *   had committed 64 transitions, until transition records became a list; the 1,000-event agent
 *   was already past that, so only the new agent shows such a cost.)
 */

const RUNS = 5;
const SHORT = 1000;
const LONG = 100_000;
const STORE_APPENDS = 100;
const LONG_RUNTIME = Number(process.env['LOG_RUNTIME_EVENTS'] ?? LONG);
const RUNTIME_PROMPTS = 10;
/** Prompts per runtime measurement: a new agent stays under 64 transition records through them. */
const RUNTIME_BURST = 8;
const BATCH = 1000;

function events(count: number, at: number): NewEvent[] {
  return Array.from({ length: count }, (_, i) => ({ type: 'message_queued' as const, payload: { n: at + i, text: 'x'.repeat(64) }, ts: new Date().toISOString() }));
}

class StoreAgent {
  version: number | null = null;
  constructor(
    readonly id: string,
    private readonly store: LowdbStore,
    private readonly lease: Lease,
  ) {}

  async append(count: number): Promise<void> {
    const result = await this.store.commit({ agent_id: this.id, expected_version: this.version, doc: { small: true }, events: events(count, 0), fencing_token: this.lease.fencing_token });
    this.version = result.version;
  }

  async grow(total: number): Promise<void> {
    for (let n = 0; n < total; n += BATCH) await this.append(Math.min(BATCH, total - n));
  }

  /** µs to append one event in its own acknowledged commit. */
  async appendCost(): Promise<number> {
    const started = performance.now();
    await this.append(1);
    return (performance.now() - started) * 1000;
  }
}

/**
 * One run: `count` rounds, each measuring every subject once in turn, so all see the same disk
 * and CPU noise; each subject's figure is the median of its measurements.
 */
async function alternate(count: number, subjects: Array<() => Promise<number>>): Promise<number[]> {
  const samples = subjects.map((): number[] => []);
  for (let i = 0; i < count; i++) {
    for (const [k, measure] of subjects.entries()) samples[k]?.push(await measure());
  }
  return samples.map(median);
}

async function newestSeq(runtime: Runtime, id: string): Promise<number> {
  return (await runtime.eventsPage(id, { limit: 1, order: 'desc' })).newest_seq;
}

/** Prompts in bursts until the agent's log holds `events` events. */
async function growThroughRuntime(runtime: Runtime, activity: Activity, id: string, events: number): Promise<void> {
  while ((await newestSeq(runtime, id)) < events) {
    const before = activity.promptsProcessed;
    const burst = Math.max(1, Math.min(50, Math.ceil((events - (await newestSeq(runtime, id))) / 7)));
    await Promise.all(Array.from({ length: burst }, () => runtime.prompt(id, { text: 'grow' })));
    await until(() => activity.promptsProcessed - before >= burst && activity.awakeCount === 0, 120_000, 'growth turns');
  }
}

/**
 * µs per event appended by a burst of prompts, awaited until their turns finished and the agent
 * slept again: the agent runs the turns back to back, so this is the CPU a turn costs, not one
 * prompt's latency (mostly the event loop's hops between a turn's operations).
 */
async function runtimeCost(runtime: Runtime, activity: Activity, id: string): Promise<number> {
  const seqBefore = await newestSeq(runtime, id);
  const before = activity.promptsProcessed;
  const started = performance.now();
  await Promise.all(Array.from({ length: RUNTIME_BURST }, () => runtime.prompt(id, { text: 'measure' })));
  await until(() => activity.promptsProcessed - before >= RUNTIME_BURST && activity.awakeCount === 0, 60_000, 'measured turns', 1);
  const elapsed = performance.now() - started;
  return (elapsed * 1000) / ((await newestSeq(runtime, id)) - seqBefore);
}

let newAgents = 0;

/** `runtimeCost` of the first prompts to an agent created (and asleep) just before. */
async function newAgentCost(runtime: Runtime, activity: Activity): Promise<number> {
  const id = `rt-new-${newAgents++}`;
  await runtime.createAgent({ agent_id: id });
  await until(() => activity.awakeCount === 0, 60_000, 'new agent asleep', 1);
  return runtimeCost(runtime, activity, id);
}

runBenchmark('log', 6 * 60_000, async () => {
  const scratch = scratchDir('log');
  const store = new LowdbStore({ dataDir: join(scratch.dir, 'store') });
  const storeShort: number[] = [];
  const storeLong: number[] = [];
  const rtShort: number[] = [];
  const rtLong: number[] = [];
  const rtNew: number[] = [];
  let runtime: Runtime | null = null;
  try {
    await store.open();
    const lease = await store.acquireLease(`bench-${process.pid}`, 600_000, new Date());
    const short = new StoreAgent('short', store, lease);
    const long = new StoreAgent('long', store, lease);
    await short.grow(SHORT);
    await long.grow(LONG);
    progress(`store: agents with ${SHORT} and ${LONG} events ready`);

    runtime = await openRuntime('memory', scratch.dir);
    const activity = new Activity(runtime);
    for (const id of ['rt-short', 'rt-long']) await runtime.createAgent({ agent_id: id });
    await until(() => activity.awakeCount === 0, 60_000, 'agents asleep');
    const grown = performance.now();
    await growThroughRuntime(runtime, activity, 'rt-short', SHORT);
    await growThroughRuntime(runtime, activity, 'rt-long', LONG_RUNTIME);
    progress(`runtime: agents with ${await newestSeq(runtime, 'rt-short')} and ${await newestSeq(runtime, 'rt-long')} events grown in ${((performance.now() - grown) / 1000).toFixed(1)} s`);

    const rt = runtime;
    const storeSubjects = [() => short.appendCost(), () => long.appendCost()];
    const runtimeSubjects = [() => newAgentCost(rt, activity), () => runtimeCost(rt, activity, 'rt-short'), () => runtimeCost(rt, activity, 'rt-long')];
    await alternate(5, storeSubjects);
    await alternate(2, runtimeSubjects);
    for (let run = 0; run < RUNS; run++) {
      const [s, l] = await alternate(STORE_APPENDS, storeSubjects);
      storeShort.push(s as number);
      storeLong.push(l as number);
      const [n, rs, rl] = await alternate(RUNTIME_PROMPTS, runtimeSubjects);
      rtNew.push(n as number);
      rtShort.push(rs as number);
      rtLong.push(rl as number);
      progress(`run ${run + 1}/${RUNS}: store ${storeShort.at(-1)?.toFixed(0)} vs ${storeLong.at(-1)?.toFixed(0)} µs, runtime ${rtNew.at(-1)?.toFixed(0)} (new) vs ${rtShort.at(-1)?.toFixed(0)} vs ${rtLong.at(-1)?.toFixed(0)} µs per event`);
    }
    activity.close();
    const longRuntimeEvents = await newestSeq(runtime, 'rt-long');
    await store.releaseLease(lease);
    const storeRatio = pairwiseRatios(storeLong, storeShort);
    const rtRatio = pairwiseRatios(rtLong, rtShort);
    const ageRatio = pairwiseRatios(rtLong, rtNew);
    return {
      metrics: [
        { name: `store (lowdb): append 1 event, log of ${SHORT.toLocaleString('en-US')}`, unit: 'µs/event', samples: storeShort },
        { name: `store (lowdb): append 1 event, log of ${LONG.toLocaleString('en-US')}`, unit: 'µs/event', samples: storeLong },
        { name: 'store ratio long / short', unit: '×', samples: storeRatio, target: '≤ 1.25', met: median(storeRatio) <= 1.25 },
        { name: `runtime (memory): per event, history ~${SHORT.toLocaleString('en-US')}`, unit: 'µs/event', samples: rtShort },
        { name: `runtime (memory): per event, history ~${longRuntimeEvents.toLocaleString('en-US')}`, unit: 'µs/event', samples: rtLong },
        { name: 'runtime ratio long / short', unit: '×', samples: rtRatio, target: '≤ 1.25', met: median(rtRatio) <= 1.25 },
        { name: 'runtime (memory): per event, a new agent (its first prompts)', unit: 'µs/event', samples: rtNew },
        { name: 'runtime ratio long / new agent', unit: '×', samples: ageRatio, target: '≤ 1.25', met: median(ageRatio) <= 1.25 },
      ],
      notes: [
        `store: per run ${STORE_APPENDS} one-event commits (fsynced) to each agent, alternating, median latency; logs grown in commits of ${BATCH} events`,
        `runtime: per run ${RUNTIME_PROMPTS} bursts of ${RUNTIME_BURST} prompts to each agent, alternating (the new agent: a new one for each burst), each awaited until the turns finished and the agent slept again; median of elapsed / events appended`,
      ],
    };
  } finally {
    await runtime?.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    scratch.remove();
  }
});
