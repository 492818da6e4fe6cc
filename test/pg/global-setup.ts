import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { CLUSTER_FILE } from './shared-cluster.js';
import { stopCluster, type ClusterRecord } from './throwaway-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the run's PostgreSQL cluster is recorded once a test file started it. */
    pgRunDir: string;
  }
}

let runDir: string | null = null;

/** Costs nothing: the first test file that needs PostgreSQL starts the run's cluster (`shared-cluster.ts`). */
export function setup(project: TestProject): void {
  runDir = mkdtempSync(join(tmpdir(), 'holon-pg-run-'));
  project.provide('pgRunDir', runDir);
}

/** Stops the run's cluster, if a test file started one. */
export function teardown(): void {
  if (runDir === null) return;
  const file = join(runDir, CLUSTER_FILE);
  if (existsSync(file)) {
    const record = JSON.parse(readFileSync(file, 'utf8')) as ClusterRecord;
    stopCluster(record.pid, record.root);
  }
  rmSync(runDir, { recursive: true, force: true });
}
