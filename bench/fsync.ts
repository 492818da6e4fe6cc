import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { LowdbStore } from '../src/store/index.js';
import type { Lease } from '../src/store/index.js';
import { scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { median, pairwiseRatios } from './lib/stats.js';
import { Versions } from './lib/versions.js';

/**
 * The durable path's commits/s against the disk's limit, measured in the same run.
 *
 * Baseline: one writer appending 4 KiB and calling fdatasync in a loop (fsyncs/s the disk
 * gives one waiting writer). Durable path: `LowdbStore.commit` of a small document plus one event,
 * each acknowledged only once durable:
 *  - `1,000 agents`: one commit to each of 1,000 agents, all issued at once (the runtime's shape:
 *    each agent's lane has one commit in flight), ten rounds per run. The target is checked here.
 *  - `one agent, one tick`: 1,000 chained commits to one agent issued in the same tick, which the
 *    group commit folds into one batch.
 * A reference row shows what the disk allows with group commit across agents: batches of 1,000
 * records of 4 KiB + 200 B (a fresh agent's doc plus one event) appended to one shared file with
 * one fdatasync per batch: what the lowdb store's commit path does, without the store around it.
 */

const RUNS = 5;
const FSYNC_LOOP_MS = 1500;
const FSYNC_LOOP_MAX = 2000;
const AGENTS = 1000;
/** Rounds of 1,000 concurrent commits per run: one round is ~25 ms, short enough for one slow fdatasync to decide it. */
const ROUNDS_PER_RUN = 10;
const SAME_AGENT_COMMITS = 1000;
const BLOCK = Buffer.alloc(4096, 'x');
const SHARED_BATCH = 1000;
const SHARED_BATCHES = 5;
const RECORD = Buffer.alloc(4096 + 200, 'r');

async function fsyncLoop(dir: string): Promise<number> {
  const handle = await open(join(dir, 'fsync-loop.bin'), 'a');
  try {
    let count = 0;
    const started = performance.now();
    while (count < FSYNC_LOOP_MAX && performance.now() - started < FSYNC_LOOP_MS) {
      await handle.write(BLOCK);
      await handle.datasync();
      count += 1;
    }
    return count / ((performance.now() - started) / 1000);
  } finally {
    await handle.close();
  }
}

/** Records/s when 1,000 records share one append and one fdatasync (cross-agent group commit). */
async function sharedLog(dir: string): Promise<number> {
  const handle = await open(join(dir, 'shared-log.bin'), 'a');
  try {
    const batch = Buffer.concat(Array.from({ length: SHARED_BATCH }, () => RECORD));
    const started = performance.now();
    for (let i = 0; i < SHARED_BATCHES; i++) {
      await handle.write(batch);
      await handle.datasync();
    }
    return (SHARED_BATCH * SHARED_BATCHES) / ((performance.now() - started) / 1000);
  } finally {
    await handle.close();
  }
}

/** A document about the size of a fresh agent's (4 KiB). */
function doc(i: number): Record<string, unknown> {
  return { i, padding: 'p'.repeat(4000) };
}

/** Commits/s of `ROUNDS_PER_RUN` rounds of one commit to each agent, all issued at once per round. */
async function manyAgents(store: LowdbStore, lease: Lease, ids: string[], versions: Versions, rounds = ROUNDS_PER_RUN): Promise<number> {
  const started = performance.now();
  for (let round = 0; round < rounds; round++) {
    await Promise.all(
      ids.map(async (id, i) => {
        const result = await store.commit({
          agent_id: id,
          expected_version: versions.get(id),
          doc: doc(i),
          events: [{ type: 'message_queued', payload: { i }, ts: new Date().toISOString() }],
          fencing_token: lease.fencing_token,
        });
        versions.set(id, result.version);
      }),
    );
  }
  return (rounds * ids.length) / ((performance.now() - started) / 1000);
}

async function oneAgentOneTick(store: LowdbStore, lease: Lease, id: string, versions: Versions): Promise<number> {
  const base = versions.get(id);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: SAME_AGENT_COMMITS }, (_, k) =>
      store.commit({
        agent_id: id,
        expected_version: base === null && k === 0 ? null : (base ?? 0) + k,
        doc: doc(k),
        events: [{ type: 'message_queued', payload: { k }, ts: new Date().toISOString() }],
        fencing_token: lease.fencing_token,
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  versions.set(id, results.at(-1)?.version ?? 0);
  return SAME_AGENT_COMMITS / seconds;
}

runBenchmark('fsync', 4 * 60_000, async () => {
  const scratch = scratchDir('fsync');
  const store = new LowdbStore({ dataDir: join(scratch.dir, 'data') });
  const baseline: number[] = [];
  const many: number[] = [];
  const single: number[] = [];
  const shared: number[] = [];
  try {
    await store.open();
    const lease = await store.acquireLease(`bench-${process.pid}`, 600_000, new Date());
    const versions = new Versions();
    const ids = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    // Warm-up: creates the agents (directories, first segment) so runs measure steady commits.
    await manyAgents(store, lease, ids, versions, 1);
    await oneAgentOneTick(store, lease, 'solo', versions);
    await fsyncLoop(scratch.dir);
    for (let run = 0; run < RUNS; run++) {
      baseline.push(await fsyncLoop(scratch.dir));
      many.push(await manyAgents(store, lease, ids, versions));
      single.push(await oneAgentOneTick(store, lease, 'solo', versions));
      shared.push(await sharedLog(scratch.dir));
      progress(`run ${run + 1}/${RUNS}: fsync loop ${baseline.at(-1)?.toFixed(0)}/s, 1,000 agents ${many.at(-1)?.toFixed(0)} commits/s, one agent ${single.at(-1)?.toFixed(0)} commits/s`);
    }
    await store.releaseLease(lease);
  } finally {
    await store.close().catch(() => undefined);
    scratch.remove();
  }
  const manyRatio = pairwiseRatios(many, baseline);
  const singleRatio = pairwiseRatios(single, baseline);
  return {
    metrics: [
      { name: 'baseline: 4 KiB append + fdatasync loop', unit: 'fsyncs/s', samples: baseline },
      { name: 'lowdb commits, 1,000 agents × 1 (concurrent), 10 rounds', unit: 'commits/s', samples: many },
      { name: 'lowdb commits, 1 agent × 1,000 in one tick', unit: 'commits/s', samples: single },
      { name: 'ratio 1,000 agents / fsync loop', unit: '×', samples: manyRatio, target: '≥ 20', met: median(manyRatio) >= 20 },
      { name: 'ratio one agent one tick / fsync loop', unit: '×', samples: singleRatio },
      { name: 'reference: shared log, 1,000 records per fdatasync', unit: 'records/s', samples: shared },
      { name: '  ratio shared log / fsync loop', unit: '×', samples: pairwiseRatios(shared, baseline) },
    ],
    notes: [
      'every commit is acknowledged once its batch of write-ahead log records is fdatasynced (one per batch, across agents); doc.json and the event segments are written by checkpoint rounds (every 16 MiB of log, off the commit path)',
      `baseline loop: ≤ ${FSYNC_LOOP_MS} ms or ${FSYNC_LOOP_MAX} iterations per run, one writer`,
    ],
  };
});
