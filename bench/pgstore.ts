import { join } from 'node:path';
import pg from 'pg';
import postgres from 'postgres';
import { LowdbStore, PostgresStore } from '../src/store/index.js';
import type { Commit, Lease, Store } from '../src/store/index.js';
import { batchArguments, commitBatchCall, type PreparedCommit } from '../src/store/postgres/commit-batch.js';
import { quoted } from '../src/store/postgres/schema.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import type { Metric } from './lib/table.js';
import { pairwiseRatios } from './lib/stats.js';
import { Versions } from './lib/versions.js';

/**
 * The PostgreSQL store's durable commits, against lowdb in the same run, on a throwaway cluster
 * (initdb in a temp dir, unix socket, fsync and synchronous_commit on: PostgreSQL's defaults).
 *
 * - Driver: the same `commit_batch` calls (batchArguments of N updates carrying whole documents, N agents)
 *   through node-postgres and postgres.js, interleaved, batches of 1, 10, 100 and 1,000 commits.
 * - Store: `commit` through PostgresStore vs LowdbStore, acknowledged once durable:
 *   `1,000 agents`: one commit to each, all issued at once (the runtime's shape), several rounds;
 *   `N lanes`: N agents each with one commit in flight at a time (batches of about N).
 * - Append cost: one agent's commits (1 event each, one at a time) when its log is empty and when
 *   it holds 100,000 events.
 * - Group commit: transactions per batch (rows sharing an xmin), and WAL syncs per commit when
 *   1,000 agents commit at once vs one commit at a time (pg_stat_wal).
 */

const RUNS = 5;
const DRIVER_SIZES = [1, 10, 100, 1000] as const;
/** Commits per driver sample at each batch size (so each sample takes a similar time). */
const DRIVER_COMMITS: Record<(typeof DRIVER_SIZES)[number], number> = { 1: 200, 10: 1_000, 100: 3_000, 1000: 5_000 };
const AGENTS = 1000;
const ROUNDS = 5;
const LANES = [1, 10, 100] as const;
const LANE_MS = 1_500;
const LONG_LOG = 100_000;
const APPEND_COMMITS = 200;

/**
 * A document about the size and shape of an agent's (about 4 KiB of JSON). As in the runtime,
 * each commit's document is a new top-level object sharing its unchanged parts with the one
 * before (the store owns committed documents; lowdb reuses the JSON of shared parts).
 */
const bases = new Map<number, Record<string, unknown>>();
function doc(i: number, round: number): Record<string, unknown> {
  let base = bases.get(i);
  if (base === undefined) {
    base = {
      id: i,
      identity: { agent_id: `agent-${i}`, mission: `benchmark agent ${i}`, created_at: new Date(0).toISOString() },
      tasks: Array.from({ length: 24 }, (_, k) => ({ id: `task-${i}-${k}`, status: k % 3 === 0 ? 'running' : 'done', attempt: k % 5, note: `step ${k}` })),
      padding: `${i}:`.repeat(400),
    };
    bases.set(i, base);
  }
  return { ...base, round, state: { value: { lifecycle: 'active', scheduler: round % 2 === 0 ? 'idle' : 'turn' }, seq: round } };
}

const event = (i: number): Commit['events'] => [{ type: 'message_queued', payload: { i, text: 'hello' }, ts: new Date().toISOString() }];

async function commitRound(store: Store, lease: Lease, ids: string[], versions: Versions, round: number): Promise<void> {
  await Promise.all(
    ids.map(async (id, i) => {
      const result = await store.commit({ agent_id: id, expected_version: versions.get(id), doc: doc(i, round), events: event(i), fencing_token: lease.fencing_token });
      versions.set(id, result.version);
    }),
  );
}

/** Commits/s of `rounds` rounds of one commit to each agent, all issued at once per round. */
async function manyAgents(store: Store, lease: Lease, ids: string[], versions: Versions, rounds: number): Promise<number> {
  const started = performance.now();
  for (let round = 0; round < rounds; round++) await commitRound(store, lease, ids, versions, round);
  return (rounds * ids.length) / ((performance.now() - started) / 1000);
}

/** Commits/s with `lanes` agents each keeping one commit in flight, for `LANE_MS`. */
async function lanes(store: Store, lease: Lease, prefix: string, count: number, versions: Versions): Promise<number> {
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const id = `${prefix}-${i}`;
      for (let round = 0; performance.now() - started < LANE_MS; round++) {
        const result = await store.commit({ agent_id: id, expected_version: versions.get(id), doc: doc(i, round), events: event(i), fencing_token: lease.fencing_token });
        versions.set(id, result.version);
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** Commits/s of one agent's commits one at a time (1 event each). */
async function appendRate(store: Store, lease: Lease, id: string, versions: Versions): Promise<number> {
  const started = performance.now();
  for (let k = 0; k < APPEND_COMMITS; k++) {
    const result = await store.commit({ agent_id: id, expected_version: versions.get(id), doc: { k }, events: event(k), fencing_token: lease.fencing_token });
    versions.set(id, result.version);
  }
  return APPEND_COMMITS / ((performance.now() - started) / 1000);
}

type Call = (args: unknown[]) => Promise<number>;

/** Batches of `size` commits to `size` agents through one driver; commits/s. */
async function driverRun(call: Call, size: number, prefix: string, versions: Versions, token: number): Promise<number> {
  const total = DRIVER_COMMITS[size as (typeof DRIVER_SIZES)[number]];
  const started = performance.now();
  for (let done = 0; done < total; done += size) {
    const batch: PreparedCommit[] = Array.from({ length: size }, (_, i) => {
      const agent_id = `${prefix}-${size}-${i}`;
      return {
        agent_id,
        expected_version: versions.get(agent_id),
        fence: { kind: 'store', token },
        doc: { mode: 'value', json: JSON.stringify(doc(i, done)) },
        rosterJson: undefined,
        events: [{ type: 'message_queued', ts: new Date().toISOString(), payloadJson: JSON.stringify({ i }) }],
      };
    });
    const rows = await call(batchArguments(batch));
    if (rows !== size) throw new Error(`expected ${size} outcomes, got ${rows}`);
    for (const commit of batch) versions.set(commit.agent_id, (versions.get(commit.agent_id) ?? 0) + 1);
  }
  return total / ((performance.now() - started) / 1000);
}

async function walSyncs(admin: pg.Client): Promise<number> {
  // A busy backend publishes its counters once it has been idle, at the latest 10 s later.
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const { rows } = await admin.query<{ wal_sync: string }>('SELECT wal_sync FROM pg_stat_wal');
  return Number(rows[0]?.wal_sync ?? 0);
}

interface GroupCommitFigures {
  transactionsPerBatch: number;
  syncsPerCommitBatched: number;
  syncsPerCommitAlone: number;
}

/** Transactions per batch (rows of one batch sharing an xmin), and WAL syncs per commit batched vs alone. */
async function groupCommit(store: PostgresStore, lease: Lease, admin: pg.Client, schema: string): Promise<GroupCommitFigures> {
  const ids = Array.from({ length: AGENTS }, (_, i) => `batch-probe-${i}`);
  const versions = new Versions();
  const rounds = 10;
  let before = await walSyncs(admin);
  for (let round = 0; round < rounds; round++) await commitRound(store, lease, ids, versions, round);
  const batched = (await walSyncs(admin)) - before;
  // Only the last round's row versions are current: one transaction per batch shows as one xmin.
  const { rows } = await admin.query<{ n: number }>(`SELECT count(DISTINCT xmin::text)::int AS n FROM ${quoted(schema)}.agents WHERE agent_id LIKE 'batch-probe-%'`);
  const alone = 200;
  before = await walSyncs(admin);
  for (let k = 0; k < alone; k++) await commitRound(store, lease, [ids[k] as string], versions, rounds + k);
  const single = (await walSyncs(admin)) - before;
  return { transactionsPerBatch: rows[0]?.n ?? 0, syncsPerCommitBatched: batched / (rounds * AGENTS), syncsPerCommitAlone: single / alone };
}

runBenchmark('pgstore', 12 * 60_000, async () => {
  const scratch = scratchDir('pgstore');
  let cluster: ThrowawayCluster | null = null;
  const lowdb = new LowdbStore({ dataDir: join(scratch.dir, 'data') });
  const metrics: Metric[] = [];
  const notes: string[] = [];
  try {
    cluster = await startThrowawayCluster();
    const url = cluster.url('postgres');
    const store = new PostgresStore({ url, schema: 'bench' });
    await store.open();
    await lowdb.open();
    const pgLease = await store.acquireLease(`bench-${process.pid}`, 3_600_000, new Date());
    const lowLease = await lowdb.acquireLease(`bench-${process.pid}`, 3_600_000, new Date());
    const admin = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
    await admin.connect();
    const { rows: settings } = await admin.query<{ name: string; setting: string }>(
      "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'server_version') ORDER BY name",
    );
    notes.push(`PostgreSQL ${settings.map((s) => `${s.name}=${s.setting}`).join(', ')}`);

    // Drivers: the very same calls.
    const nodePg = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
    await nodePg.connect();
    const porsager = postgres({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres', max: 1, onnotice: () => undefined });
    const call = commitBatchCall(quoted('bench'));
    const viaPg: Call = async (args) => (await nodePg.query(call, args)).rows.length;
    const viaPostgres: Call = async (args) => (await porsager.unsafe(call, args as never[])).length;
    const driverVersions = new Versions();
    for (const size of DRIVER_SIZES) {
      await driverRun(viaPg, size, 'pg', driverVersions, pgLease.fencing_token);
      await driverRun(viaPostgres, size, 'postgresjs', driverVersions, pgLease.fencing_token);
    }
    const driverSamples = new Map<string, number[]>();
    const sample = (key: string, value: number): void => {
      driverSamples.set(key, [...(driverSamples.get(key) ?? []), value]);
    };

    const ids = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    const pgVersions = new Versions();
    const lowVersions = new Versions();
    await manyAgents(store, pgLease, ids, pgVersions, 1);
    await manyAgents(lowdb, lowLease, ids, lowVersions, 1);
    const many = { pg: [] as number[], lowdb: [] as number[] };
    const laneSamples = new Map<number, { pg: number[]; lowdb: number[] }>(LANES.map((n) => [n, { pg: [], lowdb: [] }]));

    for (let run = 0; run < RUNS; run++) {
      for (const size of DRIVER_SIZES) {
        const first = run % 2 === 0;
        const a = await driverRun(first ? viaPg : viaPostgres, size, first ? 'pg' : 'postgresjs', driverVersions, pgLease.fencing_token);
        const b = await driverRun(first ? viaPostgres : viaPg, size, first ? 'postgresjs' : 'pg', driverVersions, pgLease.fencing_token);
        sample(`pg-${size}`, first ? a : b);
        sample(`postgresjs-${size}`, first ? b : a);
      }
      many.pg.push(await manyAgents(store, pgLease, ids, pgVersions, ROUNDS));
      many.lowdb.push(await manyAgents(lowdb, lowLease, ids, lowVersions, ROUNDS));
      for (const n of LANES) {
        laneSamples.get(n)?.pg.push(await lanes(store, pgLease, `lane${n}`, n, pgVersions));
        laneSamples.get(n)?.lowdb.push(await lanes(lowdb, lowLease, `lane${n}`, n, lowVersions));
      }
      progress(
        `run ${run + 1}/${RUNS}: 1,000 agents pg ${many.pg.at(-1)?.toFixed(0)} / lowdb ${many.lowdb.at(-1)?.toFixed(0)} commits/s; ` +
          `driver 1,000/batch pg ${driverSamples.get('pg-1000')?.at(-1)?.toFixed(0)} / postgres.js ${driverSamples.get('postgresjs-1000')?.at(-1)?.toFixed(0)} commits/s`,
      );
    }

    for (const size of DRIVER_SIZES) {
      const a = driverSamples.get(`pg-${size}`) ?? [];
      const b = driverSamples.get(`postgresjs-${size}`) ?? [];
      metrics.push(
        { name: `driver pg (node-postgres), ${size}/batch`, unit: 'commits/s', samples: a },
        { name: `driver postgres.js, ${size}/batch`, unit: 'commits/s', samples: b },
        { name: `  ratio postgres.js / pg, ${size}/batch`, unit: '×', samples: pairwiseRatios(b, a) },
      );
    }
    metrics.push(
      { name: 'lowdb commits, 1,000 agents × 1 (concurrent), 5 rounds', unit: 'commits/s', samples: many.lowdb },
      { name: 'postgres commits, 1,000 agents × 1 (concurrent), 5 rounds', unit: 'commits/s', samples: many.pg },
      { name: '  ratio postgres / lowdb, 1,000 agents', unit: '×', samples: pairwiseRatios(many.pg, many.lowdb) },
    );
    for (const n of LANES) {
      const s = laneSamples.get(n) ?? { pg: [], lowdb: [] };
      metrics.push(
        { name: `lowdb commits, ${n} lane${n === 1 ? '' : 's'} (one commit in flight each)`, unit: 'commits/s', samples: s.lowdb },
        { name: `postgres commits, ${n} lane${n === 1 ? '' : 's'} (one commit in flight each)`, unit: 'commits/s', samples: s.pg },
        { name: `  ratio postgres / lowdb, ${n} lane${n === 1 ? '' : 's'}`, unit: '×', samples: pairwiseRatios(s.pg, s.lowdb) },
      );
    }

    // Append cost against log length: one agent with an empty log, one with LONG_LOG events.
    const appendVersions = new Versions();
    let expected: number | null = null;
    for (let filled = 0; filled < LONG_LOG; filled += 1000) {
      const events = Array.from({ length: 1000 }, (_, k) => ({ type: 'message_queued' as const, payload: { k }, ts: new Date().toISOString() }));
      expected = (await store.commit({ agent_id: 'long-log', expected_version: expected, doc: { filled }, events, fencing_token: pgLease.fencing_token })).version;
    }
    appendVersions.set('long-log', expected ?? 0);
    const empty: number[] = [];
    const long: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      empty.push(await appendRate(store, pgLease, `short-log-${run}`, appendVersions));
      long.push(await appendRate(store, pgLease, 'long-log', appendVersions));
    }
    metrics.push(
      { name: 'postgres, 1 agent, sequential commits, empty log', unit: 'commits/s', samples: empty },
      { name: `postgres, 1 agent, sequential commits, log of ${LONG_LOG.toLocaleString('en-US')} events`, unit: 'commits/s', samples: long },
      { name: '  ratio long log / empty log', unit: '×', samples: pairwiseRatios(long, empty), target: '≈ 1' },
    );

    const group = await groupCommit(store, pgLease, admin, 'bench');
    metrics.push(
      { name: 'postgres transactions per batch of 1,000 commits (distinct xmin)', unit: 'tx', samples: [group.transactionsPerBatch] },
      { name: 'postgres WAL syncs per commit, 1,000 agents at once (pg_stat_wal)', unit: 'syncs', samples: [group.syncsPerCommitBatched] },
      { name: 'postgres WAL syncs per commit, one at a time (pg_stat_wal)', unit: 'syncs', samples: [group.syncsPerCommitAlone] },
    );
    notes.push(
      'a commit is acknowledged once its batch is committed: one commit_batch call (one round trip, one transaction, one WAL flush) per batch; lowdb: one fdatasync of its write-ahead log per batch',
      "both stores write only the top-level fields a commit changed (its document shares the rest with the version before): lowdb as a log record's patch, PostgreSQL as rows of agent_fields; both write a changed list or record as a delta of its entries (PostgreSQL appends it to the field's row, schema 6)",
      'driver rows: batchArguments of updates to distinct agents, each carrying its whole document (about 4 KiB), the same calls through both drivers, interleaved and alternating which goes first',
      "WAL syncs are the cluster's (pg_stat_wal): the commit's flush plus the WAL writer's background ones and segment ends while a batch's few MiB of WAL are written",
      `${RUNS} runs`,
    );
    await nodePg.end();
    await porsager.end();
    await admin.end();
    await store.close();
  } finally {
    await lowdb.close().catch(() => undefined);
    cluster?.stop();
    scratch.remove();
  }
  return { metrics, notes };
});
