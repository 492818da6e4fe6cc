import { execSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminClient } from './lib/pg-admin.js';
import { call } from '../test/http/helpers.js';
import { startNodes, type ClusterNode } from '../test/cluster/harness.js';
import { startThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { runLoads } from './lib/load.js';
import { cpuBetween, formatCpu, reapedChildren, reapedSince, sampleCpu } from './lib/proc-cpu.js';

/**
 * Where a cluster node's CPU goes under bench:cluster's prompt load (issue 19): `PROFILE_NODES`
 * (1 or 3, default 3) `serve` nodes on a throwaway database, 90 agents, `PROFILE_CONNECTIONS`
 * (default 48) connections split over the `PROFILE_LOADED` (default all) first nodes, closed loop
 * or at `PROFILE_RATE` requests a second per loaded node (the same load on one node alone and on
 * each of three tells what sharing the machine costs a node), each request to its agent's holder (`PROFILE_ROUTE=holder`, default) or to the next
 * node (`forwarded`), `PROFILE_SECONDS` (default 10) of prompts. Every node runs under
 * the profiler (`lib/cpu-profile-hook.mjs`, started as the load starts) and is stopped with SIGTERM,
 * so each writes a profile of the load:
 *
 *   npx tsx bench/profile-cluster-nodes.ts [dir]     (default bench/results/prof-cluster)
 *   npx tsx bench/lib/profile-top.ts <dir>/<label>-<node>.cpuprofile 40
 *
 * It also prints each process's CPU over the load (`/proc/<pid>/stat`), the server's function
 * calls, and the commits by the event types each wrote (how many commits a prompt costs).
 */
const NODES = Number(process.env['PROFILE_NODES'] ?? 3);
const ROUTE = process.env['PROFILE_ROUTE'] === 'forwarded' ? 'forwarded' : 'holder';
const SECONDS = Number(process.env['PROFILE_SECONDS'] ?? 10);
const OP = process.env['PROFILE_OP'] === 'wake' ? 'wake' : 'prompt';
const AGENTS = 90;
const CONNECTIONS = Number(process.env['PROFILE_CONNECTIONS'] ?? 48);
/** Nodes that receive load (the first ones; default all), and an open-loop rate per loaded node (default: closed loop). */
const LOADED = Number(process.env['PROFILE_LOADED'] ?? process.env['PROFILE_NODES'] ?? 3);
const RATE = process.env['PROFILE_RATE'] === undefined ? undefined : Number(process.env['PROFILE_RATE']);

async function main(): Promise<void> {
  const dir = process.argv[2] ?? join('bench', 'results', 'prof-cluster');
  const label = `${NODES}n-${LOADED}loaded-${CONNECTIONS}c${RATE === undefined ? '' : `-${RATE}rps`}-${ROUTE}-${OP}`;
  mkdirSync(dir, { recursive: true });
  const scratch = join(dir, `.${label}`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch);
  process.stderr.write(`  ${new Date().toISOString()} ${label}; uptime: ${execSync('uptime').toString().trim()}\n`);
  const cluster = await startThrowawayCluster();
  const admin = await adminClient(cluster);
  await admin.query('CREATE DATABASE bench_prof');
  // Counts commit_batch calls (one per group commit) in pg_stat_user_functions.
  await admin.query("ALTER DATABASE bench_prof SET track_functions = 'pl'");
  // Only the nodes load the profiler hook: the variables are gone before the load generators fork.
  process.env['NODE_OPTIONS'] = `--import ${fileURLToPath(new URL('./lib/cpu-profile-hook.mjs', import.meta.url))}`;
  process.env['HOLON_CPU_PROFILE_DIR'] = scratch;
  const set = await startNodes({ storeUrl: cluster.url('bench_prof'), count: NODES, prefix: 'prof', args: ['--lease-ttl-ms', '3000'] });
  delete process.env['NODE_OPTIONS'];
  delete process.env['HOLON_CPU_PROFILE_DIR'];
  try {
    const nodes = set.nodes;
    await Promise.all(nodes.map((node) => node.listening()));
    const owned = await Promise.all(
      nodes.map(async (node, n) => {
        const agents: string[] = [];
        for (let i = 0; i < AGENTS / NODES; i++) {
          const id = `prof-${n}-${i}`;
          const reply = await call(node.url, 'POST', '/api/control/agents', { json: { agent_id: id } });
          if (reply.status !== 201) throw new Error(`create ${id}: ${reply.status} ${reply.text}`);
          agents.push(id);
        }
        return { node, agents };
      }),
    );
    const pairs = owned.slice(0, LOADED).map(({ agents }, i) => ({ node: ROUTE === 'holder' ? (nodes[i] as ClusterNode) : (nodes[(i + 1) % nodes.length] as ClusterNode), agents }));
    const body = OP === 'prompt' ? JSON.stringify({ text: 'profile' }) : JSON.stringify({ reason: 'profile' });
    // The profiles cover the load only (the hook starts the profiler on SIGWINCH).
    for (const node of nodes) node.child?.kill('SIGWINCH');
    const before = sampleCpu([process.pid, cluster.pid]);
    const reaped = reapedChildren();
    const started = performance.now();
    const results = await runLoads(pairs.map(({ node, agents }) => ({ base: node.url, paths: agents.map((id) => `/api/control/agents/${id}/${OP}`), body, connections: Math.floor(CONNECTIONS / pairs.length), durationSeconds: SECONDS, ...(RATE === undefined ? {} : { ratePerSecond: RATE }) })));
    const wall = (performance.now() - started) / 1000;
    const rows = cpuBetween(before, sampleCpu([process.pid, cluster.pid]));
    rows.set('load generators (reaped)', reapedSince(reaped));
    const served = results.reduce((sum, r) => sum + (r.requests - r.non2xx - r.errors), 0);
    const non2xx = results.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
    process.stderr.write(`  ${label}: ${served} served (${(served / SECONDS).toFixed(0)}/s), ${non2xx} not 2xx, ${wall.toFixed(1)} s wall\n${formatCpu(rows, wall, served)}\n`);
    const idleBefore = sampleCpu([process.pid, cluster.pid]);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    process.stderr.write(`  the same nodes idle for 5 s:\n${formatCpu(cpuBetween(idleBefore, sampleCpu([process.pid, cluster.pid])), 5)}\n`);
    await Promise.all(nodes.map((node) => node.stop()));
    const db = await adminClient(cluster, 'bench_prof');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const fns = await db.query<{ funcname: string; calls: string; self_time: number }>('SELECT funcname, calls, self_time FROM pg_stat_user_functions ORDER BY calls DESC');
    // What the commits were: each commit's event types, in order (one line per kind of commit).
    const shapes = await db.query<{ types: string; commits: string }>(
      "SELECT types, count(*) AS commits FROM (SELECT string_agg(type, ',' ORDER BY event_seq) AS types FROM holon.events GROUP BY agent_id, version) c GROUP BY types ORDER BY count(*) DESC LIMIT 12",
    );
    for (const r of shapes.rows) process.stderr.write(`  ${r.commits.padStart(6)} commits of ${r.types}\n`);
    await db.end();
    for (const f of fns.rows) process.stderr.write(`  ${f.funcname}: ${f.calls} calls (${(Number(f.calls) / served).toFixed(3)} per request served), ${(f.self_time / Number(f.calls)).toFixed(2)} ms self each\n`);
    const pids = new Map(nodes.map((node) => [node.child?.pid, node.nodeId]));
    for (const file of readdirSync(scratch)) {
      const pid = Number(/^(\d+)\.cpuprofile$/.exec(file)?.[1]);
      const to = join(dir, `${label}-${pids.get(pid) ?? pid}.cpuprofile`);
      renameSync(join(scratch, file), to);
      process.stderr.write(`  profile: ${to}\n`);
    }
    rmSync(scratch, { recursive: true, force: true });
  } finally {
    await admin.end();
    await set.close();
    cluster.stop();
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('profile-cluster-nodes crashed:', error);
  process.exit(1);
});
