import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Runtime } from '../src/runtime/runtime.js';
import { PostgresStore } from '../src/store/index.js';
import { freePort, startThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { adminClient, createDatabase, settleServer } from './lib/pg-admin.js';
import { createAgents, scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import type { Metric } from './lib/table.js';
import { MiB, until } from './lib/timing.js';
import { median } from './lib/stats.js';
import { nodeFigures } from './lib/cluster-nodes.js';
import { interleavedThroughput, settle } from './lib/durable-throughput.js';
import { copyHash, copyId, fillWithCopies } from './lib/fill-agents.js';

/**
 * bench:cluster, the skeleton of issue 19's figures (same run, ratios against baselines measured
 * here):
 * 1. sleeping agents created in PostgreSQL through one runtime (`CLUSTER_CREATED_AGENTS`, default
 *    20,000), agents/s, against the same runtime creating `CLUSTER_BASELINE_AGENTS` on lowdb; then
 *    the database filled to `CLUSTER_AGENTS` (default 1,000,000) with copies of one of them at SQL
 *    speed (`lib/fill-agents.ts`), and a capability lookup and a `ListAgents` page timed on it;
 * 2. a `serve --store` node's restart-to-ready time (spawn → listening) and RSS on that database,
 *    against the same on an empty database: what boot costs per sleeping agent;
 * 3. durable prompt and wake throughput through one node, PostgreSQL vs lowdb, interleaved A B B A
 *    (`CLUSTER_PAIRS` pairs, default 2), once the server has vacuumed and checkpointed what step 1 wrote;
 * 4. over HTTP, real `serve` nodes (`lib/cluster-nodes.ts`): prompt and wake throughput through
 *    three nodes on one database vs one node (each request to its agent's holder, and all of them
 *    forwarded), and the failover time after a SIGKILL of a busy agent's owner.
 */
const AGENTS = Number(process.env['CLUSTER_AGENTS'] ?? 1_000_000);
const CREATED = Math.min(AGENTS, Number(process.env['CLUSTER_CREATED_AGENTS'] ?? 20_000));
const TEMPLATE = 'template-0000';
const COPY = 'copy-';
const BASELINE_AGENTS = Number(process.env['CLUSTER_BASELINE_AGENTS'] ?? 2_000);
const CONCURRENCY = 64;
const PAIRS = Number(process.env['CLUSTER_PAIRS'] ?? 2);
const NODE_SECONDS = Number(process.env['CLUSTER_NODE_SECONDS'] ?? 5);
const NODE_LEASE_TTL_MS = Number(process.env['CLUSTER_LEASE_TTL_MS'] ?? 3_000);

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

/**
 * On the filled database, through a cluster node that loaded nothing: 20 capability lookups of
 * copies (the store's trigger-hash index) and 5 `ListAgents` first pages; checks a copy is a
 * sleeping agent of its own.
 */
async function lookupFigures(url: string, total: number, copies: number): Promise<{ capabilityMs: number[]; listingMs: number[] }> {
  const store = new PostgresStore({ url });
  const runtime = await Runtime.open({ store, nodeId: 'bench-lookups' });
  try {
    const capabilityMs: number[] = [];
    for (let k = 1; k <= Math.min(20, copies); k++) {
      const i = Math.max(1, Math.floor((k * copies) / 20));
      const started = performance.now();
      const found = await store.agentForTriggerHash(copyHash(COPY, i));
      capabilityMs.push(performance.now() - started);
      if (found !== copyId(COPY, i)) throw new Error(`copy ${i}'s hash found ${String(found)}`);
    }
    if (copies > 0) {
      const summary = await runtime.getSummary(copyId(COPY, 1));
      if (summary.identity.agent_id !== copyId(COPY, 1) || summary.agent.status !== 'asleep') throw new Error(`copy 1 is not a sleeping agent of its own: ${JSON.stringify(summary.agent)}`);
    }
    const listingMs: number[] = [];
    for (let k = 0; k < 5; k++) {
      const started = performance.now();
      const page = await runtime.listAgents({ limit: 50 });
      listingMs.push(performance.now() - started);
      if (page.items.length !== Math.min(50, total)) throw new Error(`a listing page of ${page.items.length}`);
    }
    return { capabilityMs, listingMs };
  } finally {
    await runtime.close();
  }
}

const RESTARTS = 3;

/** `RESTARTS` restarts to ready, one after the other. */
async function restartsToReady(url: string): Promise<{ readyMs: number[]; rss: number[] }> {
  const readyMs: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < RESTARTS; i++) {
    const one = await restartToReady(url);
    readyMs.push(one.readyMs);
    rss.push(one.rss);
  }
  return { readyMs, rss };
}

runBenchmark('cluster', 6 * 3600_000, async () => {
  const cluster = await startThrowawayCluster();
  try {
    const emptyUrl = await createDatabase(cluster, 'bench_empty');
    const fullUrl = await createDatabase(cluster, 'bench_full');
    const empty = await restartsToReady(emptyUrl);

    const lowdbDir = scratchDir('cluster-lowdb');
    const lowdb = await Runtime.open({ dataDir: lowdbDir.dir, nodeId: 'bench-lowdb' });
    const lowdbCreate = await createRate(lowdb, BASELINE_AGENTS, 'lowdb');

    const pgRuntime = await Runtime.open({ store: new PostgresStore({ url: fullUrl }), nodeId: 'bench-pg' });
    await pgRuntime.createAgent({ agent_id: TEMPLATE, mission: 'benchmark' });
    const pgCreate = await createRate(pgRuntime, CREATED, 'postgres');
    const admin = await adminClient(cluster, 'bench_full');
    let total: number;
    let copies = 0;
    let fillRate = 0;
    let ops: Awaited<ReturnType<typeof interleavedThroughput>>;
    try {
      // The creation's vacuum and checkpoint would otherwise fall on the first PostgreSQL runs.
      await settleServer(admin, 'holon');
      ops = await interleavedThroughput(pgRuntime, lowdb, PAIRS);
      await lowdb.close();
      lowdbDir.remove();
      await pgRuntime.close();
      const present = async () => Number((await admin.query('SELECT count(*) AS n FROM holon.agents')).rows[0]?.n);
      copies = Math.max(0, AGENTS - (await present()));
      if (copies > 0) fillRate = await fillWithCopies(admin, 'holon', TEMPLATE, COPY, copies);
      total = await present();
    } finally {
      await admin.end();
    }
    const lookups = await lookupFigures(fullUrl, total, copies);
    const full = await restartsToReady(fullUrl);
    const nodes = await nodeFigures(await createDatabase(cluster, 'bench_one_node'), await createDatabase(cluster, 'bench_three_nodes'), NODE_SECONDS, NODE_LEASE_TTL_MS);
    const ratio = (value: number, base: number): number => value / base;
    const ge = (name: string, value: number, bound: number): Metric => ({ name, unit: '×', samples: [value], target: `≥ ${bound}`, met: value >= bound });
    const medianAtLeast = (name: string, values: number[], bound: number): Metric => ({ name, unit: '×', samples: values, target: `≥ ${bound}`, met: median(values) >= bound });
    const metrics: Metric[] = [
      { name: `create sleeping agents, PostgreSQL (${CREATED})`, unit: 'agents/s', samples: [pgCreate] },
      { name: `create sleeping agents, lowdb (${BASELINE_AGENTS}, baseline)`, unit: 'agents/s', samples: [lowdbCreate] },
      { name: '  ratio PostgreSQL / lowdb', unit: '×', samples: [ratio(pgCreate, lowdbCreate)] },
      { name: `fill to ${total} agents with copies (SQL, not the runtime)`, unit: 'agents/s', samples: [fillRate] },
      { name: `capability lookup of an unloaded agent, ${total} agents`, unit: 'ms', samples: lookups.capabilityMs },
      { name: `ListAgents first page (50), ${total} agents`, unit: 'ms', samples: lookups.listingMs },
      { name: 'durable prompt, one node, PostgreSQL', unit: 'ops/s', samples: ops.pg.map((o) => o.prompt) },
      { name: 'durable prompt, one node, lowdb (baseline)', unit: 'ops/s', samples: ops.lowdb.map((o) => o.prompt) },
      medianAtLeast('  ratio PostgreSQL / lowdb (per A B B A)', ops.ratios.map((r) => r.prompt), 0.5),
      { name: 'durable wake, one node, PostgreSQL', unit: 'ops/s', samples: ops.pg.map((o) => o.wake) },
      { name: 'durable wake, one node, lowdb (baseline)', unit: 'ops/s', samples: ops.lowdb.map((o) => o.wake) },
      medianAtLeast('  ratio PostgreSQL / lowdb (per A B B A)', ops.ratios.map((r) => r.wake), 0.5),
      { name: `serve restart to ready, ${total} agents`, unit: 'ms', samples: full.readyMs, ...(total >= 1_000_000 ? { target: '≤ 5000', met: median(full.readyMs) <= 5000 } : {}) },
      { name: 'serve restart to ready, empty database (baseline)', unit: 'ms', samples: empty.readyMs },
      { name: '  ratio', unit: '×', samples: [ratio(median(full.readyMs), median(empty.readyMs))] },
      { name: `serve RSS when ready, ${total} agents`, unit: 'MiB', samples: full.rss.map((b) => b / MiB), ...(total >= 1_000_000 ? { target: '≤ 1024', met: Math.max(...full.rss) / MiB <= 1024 } : {}) },
      { name: 'serve RSS when ready, empty database (baseline)', unit: 'MiB', samples: empty.rss.map((b) => b / MiB) },
      { name: '  ratio', unit: '×', samples: [ratio(median(full.rss), median(empty.rss))] },
      { name: 'HTTP prompt, three nodes, to the holder', unit: 'ops/s', samples: [nodes.three.prompt] },
      { name: 'HTTP prompt, one node (baseline)', unit: 'ops/s', samples: [nodes.one.prompt] },
      ge('  ratio three / one', ratio(nodes.three.prompt, nodes.one.prompt), 0.8),
      { name: 'HTTP prompt, three nodes, all forwarded', unit: 'ops/s', samples: [nodes.forwarded.prompt] },
      { name: '  ratio forwarded / one', unit: '×', samples: [ratio(nodes.forwarded.prompt, nodes.one.prompt)] },
      { name: 'HTTP wake, three nodes, to the holder', unit: 'ops/s', samples: [nodes.three.wake] },
      { name: 'HTTP wake, one node (baseline)', unit: 'ops/s', samples: [nodes.one.wake] },
      ge('  ratio three / one', ratio(nodes.three.wake, nodes.one.wake), 0.8),
      { name: 'HTTP wake, three nodes, all forwarded', unit: 'ops/s', samples: [nodes.forwarded.wake] },
      { name: '  ratio forwarded / one', unit: '×', samples: [ratio(nodes.forwarded.wake, nodes.one.wake)] },
      { name: `failover after SIGKILL (lease TTL ${nodes.leaseTtlMs} ms)`, unit: 'ms', samples: [nodes.failoverMs], target: `≤ ${nodes.leaseTtlMs + 2000}`, met: nodes.failoverMs <= nodes.leaseTtlMs + 2000 },
    ];
    return {
      metrics,
      notes: [
        `boot cost per sleeping agent (medians of ${RESTARTS} restarts each): ${((median(full.readyMs) - median(empty.readyMs)) / total).toFixed(4)} ms and ${((median(full.rss) - median(empty.rss)) / total).toFixed(0)} B of RSS (a cluster node reads nothing per agent at boot; targets at 1,000,000: ready <= 5 s, RSS <= 1 GiB)`,
        `${CREATED} agents created through the runtime, then copies of ${TEMPLATE} inserted by SQL up to ${total}`,
        `three nodes vs one: ${NODE_SECONDS} s per load after an unmeasured warm-up of the same requests per process (3 s for one node, 9 s for three), 48 connections in all from one load generator, 90 agents; on this two-core machine the three nodes share the cores with the load generators`,
      ],
    };
  } finally {
    cluster.stop();
  }
});
