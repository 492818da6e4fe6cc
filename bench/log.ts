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
 *   hide CPU costs) to an agent whose history holds ~1,000 vs ~LONG_RUNTIME events, in µs per
 *   appended event. Growing an agent through the runtime gets slower as it grows, so the long
 *   history is smaller than 100,000; a ratio above the target here can only be worse at 100,000.
 */

const RUNS = 5;
const SHORT = 1000;
const LONG = 100_000;
const STORE_APPENDS = 100;
const LONG_RUNTIME = Number(process.env['LOG_RUNTIME_EVENTS'] ?? 3000);
const RUNTIME_PROMPTS = 10;
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
 * One run: `count` measurements alternating between the short and the long subject, so both see
 * the same disk and CPU noise; each side's figure is the median of its measurements.
 */
async function alternate(count: number, short: () => Promise<number>, long: () => Promise<number>): Promise<{ short: number; long: number }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < count; i++) {
    a.push(await short());
    b.push(await long());
  }
  return { short: median(a), long: median(b) };
}

async function newestSeq(runtime: Runtime, id: string): Promise<number> {
  return (await runtime.eventsPage(id, { limit: 1, order: 'desc' })).newest_seq;
}

/** Prompts in bursts until the agent's log holds `events` events. */
async function growThroughRuntime(runtime: Runtime, activity: Activity, id: string, events: number): Promise<void> {
  while ((await newestSeq(runtime, id)) < events) {
    const before = activity.turnsFinished;
    const burst = Math.max(1, Math.min(50, Math.ceil((events - (await newestSeq(runtime, id))) / 7)));
    await Promise.all(Array.from({ length: burst }, () => runtime.prompt(id, { text: 'grow' })));
    await until(() => activity.turnsFinished - before >= burst && activity.awakeCount === 0, 120_000, 'growth turns');
  }
}

/** µs per event appended by one prompt, awaited until its turn finished and the agent slept again. */
async function runtimeCost(runtime: Runtime, activity: Activity, id: string): Promise<number> {
  const seqBefore = await newestSeq(runtime, id);
  const before = activity.turnsFinished;
  const started = performance.now();
  await runtime.prompt(id, { text: 'measure' });
  await until(() => activity.turnsFinished > before && activity.awakeCount === 0, 60_000, 'measured turn', 1);
  const elapsed = performance.now() - started;
  return (elapsed * 1000) / ((await newestSeq(runtime, id)) - seqBefore);
}

runBenchmark('log', 6 * 60_000, async () => {
  const scratch = scratchDir('log');
  const store = new LowdbStore({ dataDir: join(scratch.dir, 'store') });
  const storeShort: number[] = [];
  const storeLong: number[] = [];
  const rtShort: number[] = [];
  const rtLong: number[] = [];
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
    await alternate(5, () => short.appendCost(), () => long.appendCost());
    await alternate(2, () => runtimeCost(rt, activity, 'rt-short'), () => runtimeCost(rt, activity, 'rt-long'));
    for (let run = 0; run < RUNS; run++) {
      const s = await alternate(STORE_APPENDS, () => short.appendCost(), () => long.appendCost());
      storeShort.push(s.short);
      storeLong.push(s.long);
      const r = await alternate(RUNTIME_PROMPTS, () => runtimeCost(rt, activity, 'rt-short'), () => runtimeCost(rt, activity, 'rt-long'));
      rtShort.push(r.short);
      rtLong.push(r.long);
      progress(`run ${run + 1}/${RUNS}: store ${storeShort.at(-1)?.toFixed(0)} vs ${storeLong.at(-1)?.toFixed(0)} µs, runtime ${rtShort.at(-1)?.toFixed(0)} vs ${rtLong.at(-1)?.toFixed(0)} µs per event`);
    }
    activity.close();
    const longRuntimeEvents = await newestSeq(runtime, 'rt-long');
    await store.releaseLease(lease);
    const storeRatio = pairwiseRatios(storeLong, storeShort);
    const rtRatio = pairwiseRatios(rtLong, rtShort);
    return {
      metrics: [
        { name: `store (lowdb): append 1 event, log of ${SHORT.toLocaleString('en-US')}`, unit: 'µs/event', samples: storeShort },
        { name: `store (lowdb): append 1 event, log of ${LONG.toLocaleString('en-US')}`, unit: 'µs/event', samples: storeLong },
        { name: 'store ratio long / short', unit: '×', samples: storeRatio, target: '≤ 1.25', met: median(storeRatio) <= 1.25 },
        { name: `runtime (memory): per event, history ~${SHORT.toLocaleString('en-US')}`, unit: 'µs/event', samples: rtShort },
        { name: `runtime (memory): per event, history ~${longRuntimeEvents.toLocaleString('en-US')}`, unit: 'µs/event', samples: rtLong },
        { name: 'runtime ratio long / short', unit: '×', samples: rtRatio, target: '≤ 1.25', met: median(rtRatio) <= 1.25 },
      ],
      notes: [
        `store: per run ${STORE_APPENDS} one-event commits (fsynced) to each agent, alternating, median latency; logs grown in commits of ${BATCH} events`,
        `runtime: per run ${RUNTIME_PROMPTS} prompts to each agent, alternating, each awaited until its turn finished and the agent slept again; median of elapsed / events appended`,
      ],
    };
  } finally {
    await runtime?.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    scratch.remove();
  }
});
