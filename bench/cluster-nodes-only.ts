import { execSync } from 'node:child_process';
import { adminClient, createDatabase } from './lib/pg-admin.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { nodeFigures, type LoadObserver } from './lib/cluster-nodes.js';
import { cpuBetween, formatCpu, machineSeconds, reapedChildren, reapedSince, sampleCpu } from './lib/proc-cpu.js';

/**
 * Only bench:cluster's node figures (issue 19): three `serve` nodes on one database against one
 * node, over HTTP (`lib/cluster-nodes.ts`), on a throwaway PostgreSQL cluster; prints the figures
 * and the same-run ratios. A minute, against bench:cluster's hours.
 *
 *   npx tsx bench/cluster-nodes-only.ts
 *
 * `CLUSTER_NODE_SECONDS` (default 5) per load, `CLUSTER_LEASE_TTL_MS` (default 3000);
 * `CLUSTER_NODE_CPU=1` also prints, for every load, the CPU each process took
 * (`/proc/<pid>/stat` utime + stime): the serve nodes, the postgres backends, the load generators.
 */
const SECONDS = Number(process.env['CLUSTER_NODE_SECONDS'] ?? 5);
const LEASE_TTL_MS = Number(process.env['CLUSTER_LEASE_TTL_MS'] ?? 3_000);
const CPU = process.env['CLUSTER_NODE_CPU'] === '1';

/** Commits and WAL flushes so far, per database (`pg_stat_database`, `pg_stat_wal`). */
async function pgCounters(cluster: ThrowawayCluster): Promise<{ commits: Map<string, number>; walSyncs: number; walWrites: number }> {
  const client = await adminClient(cluster);
  try {
    // Each backend reports its counters at most once a second (PostgreSQL 15): this gives them the time.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const dbs = await client.query<{ datname: string; xact_commit: string }>('SELECT datname, xact_commit FROM pg_stat_database WHERE datname IS NOT NULL');
    const wal = await client.query<{ wal_sync: string; wal_write: string }>('SELECT wal_sync, wal_write FROM pg_stat_wal');
    return {
      commits: new Map(dbs.rows.map((r) => [r.datname, Number(r.xact_commit)])),
      walSyncs: Number(wal.rows[0]?.wal_sync ?? 0),
      walWrites: Number(wal.rows[0]?.wal_write ?? 0),
    };
  } finally {
    await client.end();
  }
}

function cpuObserver(cluster: ThrowawayCluster): LoadObserver {
  type Mark = { at: number; before: ReturnType<typeof sampleCpu>; reaped: ReturnType<typeof reapedChildren>; machine: ReturnType<typeof machineSeconds>; pg: Awaited<ReturnType<typeof pgCounters>> };
  const open = new Map<string, Mark>();
  return {
    async start(label) {
      const pgBefore = await pgCounters(cluster);
      open.set(label, { at: performance.now(), before: sampleCpu([process.pid, cluster.pid]), reaped: reapedChildren(), machine: machineSeconds(), pg: pgBefore });
    },
    async end(label, served, seconds) {
      const was = open.get(label);
      if (!was) return;
      const wall = (performance.now() - was.at) / 1000;
      const rows = cpuBetween(was.before, sampleCpu([process.pid, cluster.pid]));
      rows.set('load generators (reaped)', reapedSince(was.reaped));
      const machine = machineSeconds();
      const requests = Math.round(served * seconds);
      const pgAfter = await pgCounters(cluster);
      const db = /(^| )one/.test(label) ? 'bench_one_node' : 'bench_three_nodes';
      const commits = (pgAfter.commits.get(db) ?? 0) - (was.pg.commits.get(db) ?? 0);
      const syncs = pgAfter.walSyncs - was.pg.walSyncs;
      const busy = machine.busy - was.machine.busy;
      process.stderr.write(
        `  CPU during "${label}" (${wall.toFixed(1)} s wall, ${served.toFixed(0)} served/s, ~${requests} requests):\n${formatCpu(rows, wall, requests)}\n` +
          `    machine busy ${busy.toFixed(2)} s of ${(machine.total - was.machine.total).toFixed(2)} s (all cores, every process on the machine)\n` +
          `    ${db}: ${commits} transactions committed (${(commits / Math.max(1, requests)).toFixed(2)} per request), WAL flushes ${syncs} (${(syncs / Math.max(1, requests)).toFixed(2)} per request)\n`,
      );
    },
  };
}

async function main(): Promise<void> {
  process.stderr.write(`  ${new Date().toISOString()} uptime: ${execSync('uptime').toString().trim()}\n`);
  const cluster = await startThrowawayCluster();
  try {
    const figures = await nodeFigures(await createDatabase(cluster, 'bench_one_node'), await createDatabase(cluster, 'bench_three_nodes'), SECONDS, LEASE_TTL_MS, CPU ? cpuObserver(cluster) : undefined);
    const { one, three, forwarded } = figures;
    const row = (name: string, value: number, unit: string): string => `${name.padEnd(44)} ${value.toFixed(value < 10 ? 3 : 1).padStart(8)} ${unit}`;
    console.log(
      [
        `cluster node figures (${SECONDS} s per load, lease TTL ${LEASE_TTL_MS} ms)`,
        row('HTTP prompt, one node (baseline)', one.prompt, 'ops/s'),
        row('HTTP prompt, three nodes, to the holder', three.prompt, 'ops/s'),
        row('  ratio three / one (≥ 0.8)', three.prompt / one.prompt, '×'),
        row('HTTP prompt, three nodes, all forwarded', forwarded.prompt, 'ops/s'),
        row('  ratio forwarded / one', forwarded.prompt / one.prompt, '×'),
        row('HTTP wake, one node (baseline)', one.wake, 'ops/s'),
        row('HTTP wake, three nodes, to the holder', three.wake, 'ops/s'),
        row('  ratio three / one (≥ 0.8)', three.wake / one.wake, '×'),
        row('HTTP wake, three nodes, all forwarded', forwarded.wake, 'ops/s'),
        row('  ratio forwarded / one', forwarded.wake / one.wake, '×'),
        row(`failover after SIGKILL (lease TTL ${LEASE_TTL_MS} ms)`, figures.failoverMs, 'ms'),
      ].join('\n'),
    );
  } finally {
    cluster.stop();
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('cluster-nodes-only crashed:', error);
  process.exit(1);
});
