/**
 * `npm run soak:cluster [-- --seconds 60 --agents 1000 --seed 19]`: issue 19 acceptance #1 in
 * full (test/cluster/chaos.test.ts is the CI version): three `serve` nodes on a throwaway
 * PostgreSQL database, the agents created, then mixed load through random nodes while a chaos loop
 * SIGKILLs (and restarts) or SIGSTOPs (past the lease, then SIGCONT) a random node; afterwards the
 * checker reads the database directly. Prints the counts and the violations; exits 1 on any.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createDatabase } from './lib/pg-admin.js';
import { runChaos } from '../test/cluster/chaos.js';
import { checkCluster } from '../test/cluster/checker.js';
import { startNodes } from '../test/cluster/harness.js';
import { readClusterFacts } from '../test/cluster/read-facts.js';
import { startThrowawayCluster } from '../test/pg/throwaway-cluster.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    agents: { type: 'string', default: '1000' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    ttl: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '16' },
  },
});
const ttl = Number(values.ttl);
const cluster = await startThrowawayCluster();
await createDatabase(cluster, 'soak');
const started = Date.now();
console.log(`soak:cluster: seed=${values.seed} seconds=${values.seconds} agents=${values.agents} ttl=${ttl} ms loadavg=${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const set = await startNodes({ storeUrl: cluster.url('soak'), count: 3, args: ['--lease-ttl-ms', String(ttl)] });
let exitCode = 1;
try {
  await Promise.all(set.nodes.map((node) => node.listening()));
  const report = await runChaos({
    nodes: set.nodes,
    agents: Number(values.agents),
    durationMs: Number(values.seconds) * 1000,
    concurrency: Number(values.concurrency),
    leaseTtlMs: ttl,
    chaosEveryMs: 4_000,
    seed: Number(values.seed),
    log: (line) => console.log(`  ${line}`),
  });
  // Let the claim loops take over what the last chaos left, then stop cleanly.
  await new Promise((resolve) => setTimeout(resolve, 2 * ttl));
  const codes = await Promise.all(set.nodes.map((node) => node.stop()));
  const facts = await readClusterFacts({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'soak' }, report.acknowledged);
  const violations = checkCluster(facts);
  console.log(`soak:cluster: ${report.kills} kills, ${report.pauses} pauses, ${report.acknowledged.length} acknowledged operations, ${facts.events.length} events, ${facts.grants.length} lease grants checked; node exits ${codes.join(' ')}; ${Math.round((Date.now() - started) / 1000)} s; loadavg=${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`soak:cluster: ${violations.length} violations`);
  for (const v of violations.slice(0, 50)) console.log(`  ${v.rule} ${v.agent_id}: ${v.detail}`);
  exitCode = violations.length === 0 ? 0 : 1;
} finally {
  await set.close();
  cluster.stop();
}
process.exit(exitCode);
