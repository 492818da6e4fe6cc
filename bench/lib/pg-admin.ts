import pg from 'pg';
import type { ThrowawayCluster } from '../../test/pg/throwaway-cluster.js';

/** A superuser client of the throwaway cluster (its unix socket), connected. */
export async function adminClient(cluster: ThrowawayCluster, database = 'postgres'): Promise<pg.Client> {
  const client = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database });
  await client.connect();
  return client;
}

/** Creates the database `name` (an unquoted identifier) and gives its URL. */
export async function createDatabase(cluster: ThrowawayCluster, name: string): Promise<string> {
  const admin = await adminClient(cluster);
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return cluster.url(name);
}

/**
 * Does now what the server would do in the background after a bulk write (vacuum, statistics, a
 * checkpoint) to the store's tables in `schema`, so the measurements that follow do not share the
 * machine with it.
 */
export async function settleServer(client: pg.Client, schema: string): Promise<void> {
  for (const table of ['agents', 'agent_fields', 'events', 'agent_leases', 'lease_grants', 'agent_capabilities']) await client.query(`VACUUM ANALYZE "${schema}".${table}`);
  await client.query('CHECKPOINT');
}
