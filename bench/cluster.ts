import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { Runtime } from '../src/runtime/runtime.js';
import { PostgresStore } from '../src/store/index.js';
import { freePort, startThrowawayCluster, type ThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { Activity } from './lib/activity.js';
import { createAgents, scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import type { Metric } from './lib/table.js';
import { MiB, pool, until } from './lib/timing.js';

/**
 * bench:cluster, the skeleton of issue 19's figures (same run, ratios against baselines measured
 * here):
 * 1. sleeping agents created in PostgreSQL through one runtime (`CLUSTER_AGENTS`, default
 *    1,000,000), agents/s, against the same runtime creating `CLUSTER_BASELINE_AGENTS` on lowdb;
 * 2. a `serve --store` node's restart-to-ready time (spawn → listening) and RSS on that database,
 *    against the same on an empty database: what boot costs per sleeping agent;
 * 3. durable prompt and wake throughput through one node, PostgreSQL vs lowdb.
 * Not yet: three nodes vs one on one database and failover time (they need the runtime's
 * per-agent ownership, docs/cluster-design.md).
 */
const AGENTS = Number(process.env['CLUSTER_AGENTS'] ?? 1_000_000);
const BASELINE_AGENTS = Number(process.env['CLUSTER_BASELINE_AGENTS'] ?? 2_000);
const OPS = Number(process.env['CLUSTER_OPS'] ?? 2_000);
const OPS_AGENTS = 100;
const CONCURRENCY = 64;

async function database(cluster: ThrowawayCluster, name: string): Promise<string> {
  const admin = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return cluster.url(name);
}

async function settle(runtime: Runtime): Promise<void> {
  const activity = new Activity(runtime);
  await until(() => activity.awakeCount === 0, 600_000, 'agents to sleep', 50);
}

/** Creates `count` agents in batches and lets each batch sleep; agents/s over the whole. */
async function createRate(runtime: Runtime, count: number, label: string): Promise<number> {
  const step = Math.min(count, 50_000);
  const started = performance.now();
  for (let from = 0; from < count; from += step) {
    const n = Math.min(step, count - from);
    await createAgents(runtime, n, `sleep-${from}-`, CONCURRENCY);
    await settle(runtime);
    progress(`${label}: ${from + n}/${count} created, ${(((from + n) * 1000) / (performance.now() - started)).toFixed(0)} agents/s, RSS ${(process.memoryUsage.rss() / MiB).toFixed(0)} MiB`);
  }
  return (count * 1000) / (performance.now() - started);
}

/** Durable prompts and wakes (each awaited until acknowledged), `CONCURRENCY` in flight over `OPS_AGENTS` agents. */
async function throughput(runtime: Runtime): Promise<{ prompt: number; wake: number }> {
  const ids = await createAgents(runtime, OPS_AGENTS, `ops-${Date.now()}-`, CONCURRENCY);
  await settle(runtime);
  const run = async (op: (id: string, i: number) => Promise<unknown>): Promise<number> => {
    const started = performance.now();
    await pool(Array.from({ length: OPS }, (_, i) => i), CONCURRENCY, async (i) => {
      await op(ids[i % ids.length] as string, i);
    });
    const rate = (OPS * 1000) / (performance.now() - started);
    await settle(runtime);
    return rate;
  };
  const prompt = await run((id, i) => runtime.prompt(id, { text: `bench ${i}` }));
  const wake = await run((id) => runtime.wake(id, { reason: 'bench:cluster' }));
  return { prompt, wake };
}

/** Spawns `serve --store url`, resolves at its listening line with the time taken and its RSS then. */
async function restartToReady(url: string): Promise<{ readyMs: number; rss: number }> {
  const { dir, remove } = scratchDir('cluster-node');
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--store', url, '--data-dir', dir, '--port', String(port), '--log-level', 'warn', '--node-id', `bench-node-${port}`], {
    env: { ...process.env, HOLON_TOKEN: '', HOLON_DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  try {
    await until(() => text.includes('listening on ') || child.exitCode !== null, 600_000, 'the node to listen', 10);
    if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}:\n${text}`);
    const readyMs = performance.now() - started;
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    return { readyMs, rss };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    remove();
  }
}

runBenchmark('cluster', 6 * 3600_000, async () => {
  const cluster = await startThrowawayCluster();
  try {
    const emptyUrl = await database(cluster, 'bench_empty');
    const fullUrl = await database(cluster, 'bench_full');
    const empty = await restartToReady(emptyUrl);

    const lowdbDir = scratchDir('cluster-lowdb');
    const lowdb = await Runtime.open({ dataDir: lowdbDir.dir, nodeId: 'bench-lowdb' });
    const lowdbCreate = await createRate(lowdb, BASELINE_AGENTS, 'lowdb');
    const lowdbOps = await throughput(lowdb);
    await lowdb.close();
    lowdbDir.remove();

    const pgRuntime = await Runtime.open({ store: new PostgresStore({ url: fullUrl }), nodeId: 'bench-pg' });
    const pgCreate = await createRate(pgRuntime, AGENTS, 'postgres');
    const pgOps = await throughput(pgRuntime);
    await pgRuntime.close();

    const full = await restartToReady(fullUrl);
    const ratio = (value: number, base: number): number => value / base;
    const ge = (name: string, value: number, bound: number): Metric => ({ name, unit: '×', samples: [value], target: `≥ ${bound}`, met: value >= bound });
    const total = AGENTS + OPS_AGENTS;
    const metrics: Metric[] = [
      { name: `create sleeping agents, PostgreSQL (${AGENTS})`, unit: 'agents/s', samples: [pgCreate] },
      { name: `create sleeping agents, lowdb (${BASELINE_AGENTS}, baseline)`, unit: 'agents/s', samples: [lowdbCreate] },
      { name: '  ratio PostgreSQL / lowdb', unit: '×', samples: [ratio(pgCreate, lowdbCreate)] },
      { name: 'durable prompt, one node, PostgreSQL', unit: 'ops/s', samples: [pgOps.prompt] },
      { name: 'durable prompt, one node, lowdb (baseline)', unit: 'ops/s', samples: [lowdbOps.prompt] },
      ge('  ratio PostgreSQL / lowdb', ratio(pgOps.prompt, lowdbOps.prompt), 0.5),
      { name: 'durable wake, one node, PostgreSQL', unit: 'ops/s', samples: [pgOps.wake] },
      { name: 'durable wake, one node, lowdb (baseline)', unit: 'ops/s', samples: [lowdbOps.wake] },
      ge('  ratio PostgreSQL / lowdb', ratio(pgOps.wake, lowdbOps.wake), 0.5),
      { name: `serve restart to ready, ${total} agents`, unit: 'ms', samples: [full.readyMs], ...(AGENTS >= 1_000_000 ? { target: '≤ 5000', met: full.readyMs <= 5000 } : {}) },
      { name: 'serve restart to ready, empty database (baseline)', unit: 'ms', samples: [empty.readyMs] },
      { name: '  ratio', unit: '×', samples: [ratio(full.readyMs, empty.readyMs)] },
      { name: `serve RSS when ready, ${total} agents`, unit: 'MiB', samples: [full.rss / MiB], ...(AGENTS >= 1_000_000 ? { target: '≤ 1024', met: full.rss / MiB <= 1024 } : {}) },
      { name: 'serve RSS when ready, empty database (baseline)', unit: 'MiB', samples: [empty.rss / MiB] },
      { name: '  ratio', unit: '×', samples: [ratio(full.rss, empty.rss)] },
    ];
    return {
      metrics,
      notes: [
        `boot cost per sleeping agent: ${((full.readyMs - empty.readyMs) / total).toFixed(4)} ms and ${((full.rss - empty.rss) / total).toFixed(0)} B of RSS (today boot reads the whole roster; targets at 1,000,000: ready <= 5 s, RSS <= 1 GiB)`,
        'three nodes vs one and failover time: not measured yet (need per-agent ownership in the runtime)',
      ],
    };
  } finally {
    cluster.stop();
  }
});
