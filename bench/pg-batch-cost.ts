import { readFileSync } from 'node:fs';
import pg from 'pg';
import { PostgresStore } from '../src/store/index.js';
import { batchArguments, commitBatchCall, type PreparedCommit } from '../src/store/postgres/commit-batch.js';
import { quoted } from '../src/store/postgres/schema.js';
import { startThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { cpuSecondsOf } from './lib/proc-cpu.js';

/**
 * What one `commit_batch` call costs the PostgreSQL backend, by batch size: batches of 1, 2, 4, 8
 * and 16 commits (each to its own agent: a patch of two fields and two events, as a prompt's
 * commits are) sent one after another on one connection, and the backend's CPU
 * (`/proc/<pid>/stat`, utime + stime) per batch and per commit. CPU, not time, so the figure holds
 * on a busy machine; the fixed part (size 1) is what a cluster of small batches pays per commit.
 *
 *   npx tsx bench/pg-batch-cost.ts
 *
 * `PG_BATCH_SQL=<file>` runs that SQL first (a `CREATE OR REPLACE FUNCTION xp.commit_batch …`
 * to measure a variant of the function).
 */
const SIZES = [1, 2, 4, 8, 16] as const;
const BATCHES = 400;
const ROUNDS = 2;

async function main(): Promise<void> {
  const cluster = await startThrowawayCluster();
  const store = new PostgresStore({ url: cluster.url('postgres'), schema: 'xp' });
  const client = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
  try {
    await store.open();
    const lease = await store.acquireLease('pg-batch-cost', 3_600_000, new Date());
    await client.connect();
    const variant = process.env['PG_BATCH_SQL'];
    if (variant) await client.query(readFileSync(variant, 'utf8'));
    const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    if (backend === undefined) throw new Error('no backend pid');
    const call = commitBatchCall(quoted('xp'));
    const versions = new Map<string, number>();
    const commitOf = (agent_id: string, b: number): PreparedCommit => {
      const version = versions.get(agent_id) ?? null;
      const events: PreparedCommit['events'] = [
        { type: 'message_queued', ts: new Date().toISOString(), payloadJson: JSON.stringify({ agent_id, b }) },
        { type: 'turn_started', ts: new Date().toISOString(), payloadJson: JSON.stringify({ agent_id, b }) },
      ];
      const doc: PreparedCommit['doc'] =
        version === null
          ? { mode: 'record', fields: [{ name: 'identity', ord: 0, json: JSON.stringify({ agent_id }), delta: false }, { name: 'queue', ord: 1, json: JSON.stringify(['q'.repeat(3_000)]), delta: false }, { name: 'state', ord: 2, json: '{"b":0}', delta: false }] }
          : { mode: 'patch', fields: [{ name: 'state', ord: 2, json: JSON.stringify({ b }), delta: false }, { name: 'turn', ord: 3, json: JSON.stringify({ b, text: 'x'.repeat(200) }), delta: false }] };
      return { agent_id, expected_version: version, fence: { kind: 'store', token: lease.fencing_token }, doc, rosterJson: undefined, events };
    };
    const run = async (size: number, batches: number): Promise<{ wallMs: number; cpuMs: number }> => {
      const started = performance.now();
      const cpuBefore = cpuSecondsOf(backend);
      for (let b = 0; b < batches; b++) {
        const batch = Array.from({ length: size }, (_, i) => commitOf(`agent-${i}`, b));
        const { rows } = await client.query<{ outcome: string }>(call, batchArguments(batch));
        const refused = rows.find((row) => row.outcome !== 'ok');
        if (refused) throw new Error(`commit refused: ${JSON.stringify(refused)}`);
        for (const commit of batch) versions.set(commit.agent_id, (versions.get(commit.agent_id) ?? 0) + 1);
      }
      return { wallMs: (performance.now() - started) / batches, cpuMs: ((cpuSecondsOf(backend) - cpuBefore) * 1000) / batches };
    };
    await run(16, 20);
    console.log(`commit_batch: backend CPU per call, ${BATCHES} calls per row`);
    for (let round = 1; round <= ROUNDS; round++)
      for (const size of SIZES) {
        const { wallMs, cpuMs } = await run(size, BATCHES);
        console.log(`  round ${round}, ${String(size).padStart(2)} per batch: ${cpuMs.toFixed(3)} ms CPU per call (${(cpuMs / size).toFixed(3)} per commit), ${wallMs.toFixed(3)} ms wall`);
      }
  } finally {
    await client.end().catch(() => undefined);
    await store.close();
    cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('pg-batch-cost crashed:', error);
    process.exit(1);
  },
);
