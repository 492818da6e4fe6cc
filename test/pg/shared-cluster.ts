import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { clusterAt, findPostgresBin, POSTGRES_MISSING, startThrowawayCluster, type ClusterRecord, type ThrowawayCluster } from './throwaway-cluster.js';

export const CLUSTER_FILE = 'cluster.json';
const FAILED_FILE = 'failed.txt';

/** A database of its own for one test file, on the run's cluster. */
export interface TestDatabase {
  cluster: ThrowawayCluster;
  name: string;
  /** `postgres://postgres@/<name>?host=<socket dir>` */
  url: string;
}

let mine: Promise<ThrowawayCluster> | null = null;

/**
 * The run's one cluster: the first test file to ask starts it (`mkdir` decides who) and records
 * it in the run dir; the others wait for the record. The global teardown stops it.
 */
function runCluster(): Promise<ThrowawayCluster> {
  mine ??= (async () => {
    const runDir = inject('pgRunDir');
    const record = join(runDir, CLUSTER_FILE);
    const failed = join(runDir, FAILED_FILE);
    let starter = true;
    try {
      mkdirSync(join(runDir, 'starting'));
    } catch {
      starter = false;
    }
    if (starter) {
      try {
        const cluster = await startThrowawayCluster();
        const { root, socketDir, dataDir, pid, tcpPort } = cluster;
        writeFileSync(`${record}.tmp`, JSON.stringify({ root, socketDir, dataDir, pid, tcpPort } satisfies ClusterRecord));
        renameSync(`${record}.tmp`, record);
        return cluster;
      } catch (error) {
        writeFileSync(failed, error instanceof Error ? error.message : String(error));
        throw error;
      }
    }
    for (let waited = 0; waited < 60_000; waited += 100) {
      if (existsSync(record)) return clusterAt(JSON.parse(readFileSync(record, 'utf8')) as ClusterRecord);
      if (existsSync(failed)) throw new Error(`the run's PostgreSQL cluster failed to start: ${readFileSync(failed, 'utf8')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("the run's PostgreSQL cluster did not start within 60 s");
  })();
  return mine;
}

/**
 * A new database for this test file, or `null` when PostgreSQL is absent and the run chose to
 * skip (`HOLON_SKIP_PG=1`, never in CI): then the suites say so loudly and skip. Without that
 * choice a missing PostgreSQL fails the file.
 */
export async function testDatabase(label: string): Promise<TestDatabase | null> {
  if (findPostgresBin() === null) {
    if (process.env['HOLON_SKIP_PG'] === '1' && process.env['CI'] !== 'true') {
      console.warn(`\n*** SKIPPING the PostgreSQL suites of ${label}: ${POSTGRES_MISSING}\n`);
      return null;
    }
    throw new Error(POSTGRES_MISSING);
  }
  const cluster = await runCluster();
  const name = `${label}_${process.pid}_${Date.now().toString(36)}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const admin = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.query(`GRANT ALL ON DATABASE "${name}" TO ${cluster.passwordRole.user}`);
  } finally {
    await admin.end();
  }
  return { cluster, name, url: cluster.url(name) };
}
