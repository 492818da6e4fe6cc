import pg from 'pg';
import { startNodes, type ClusterNode } from '../test/cluster/harness.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../test/pg/throwaway-cluster.js';

/**
 * `npm run cluster`: three `serve` nodes on one PostgreSQL database, at http://127.0.0.1:8081,
 * :8082 and :8083 (`--base-port <n>` moves them). The database is `HOLON_DATABASE_URL` when set;
 * otherwise a throwaway local cluster (initdb in a temp dir, removed with everything in it on
 * exit). Ctrl-C (SIGINT) or SIGTERM stops every node cleanly, then the throwaway database.
 *
 * Every node serves every agent (docs/cluster-design.md): each agent has its own lease, a request
 * for an agent another node holds is forwarded there, and the agents of a node that dies are taken
 * over by the others once their leases run out. A node that exits is started again here.
 */
const NODES = 3;
const RESTART_DELAY_MS = 1_000;

function basePort(argv: string[]): number {
  const i = argv.indexOf('--base-port');
  if (i === -1) return 8081;
  const port = Number(argv[i + 1]);
  if (!Number.isInteger(port) || port < 1 || port > 65535 - NODES) throw new Error(`--base-port takes a port number, not ${JSON.stringify(argv[i + 1])}`);
  return port;
}

async function throwawayDatabase(): Promise<{ url: string; cluster: ThrowawayCluster }> {
  const cluster = await startThrowawayCluster();
  const admin = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query('CREATE DATABASE holon');
  } finally {
    await admin.end();
  }
  return { url: cluster.url('holon'), cluster };
}

async function main(): Promise<void> {
  const first = basePort(process.argv.slice(2));
  const given = process.env['HOLON_DATABASE_URL'];
  const database = given ? { url: given, cluster: null } : await throwawayDatabase();
  console.log(`cluster: database ${given ? 'from HOLON_DATABASE_URL' : `${database.url} (throwaway, removed on exit)`}`);
  const set = await startNodes({ storeUrl: database.url, count: NODES, echo: true, ports: Array.from({ length: NODES }, (_, i) => first + i) });
  let stopping = false;
  const supervise = async (node: ClusterNode): Promise<void> => {
    for (;;) {
      const code = await node.exited;
      if (stopping) return;
      console.log(`cluster: ${node.nodeId} exited (${code}); starting it again in ${RESTART_DELAY_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
      if (stopping) return;
      node.start();
    }
  };
  const supervisors = set.nodes.map(supervise);
  console.log(`cluster: ${set.nodes.map((n) => `${n.nodeId} ${n.url}`).join(', ')}; Ctrl-C stops all`);

  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`cluster: ${signal}: stopping the nodes`);
    const codes = await Promise.all(set.nodes.map((node) => node.stop()));
    console.log(`cluster: nodes stopped (${set.nodes.map((n, i) => `${n.nodeId} ${codes[i]}`).join(', ')})`);
    await set.close();
    await Promise.all(supervisors);
    database.cluster?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

await main();
