import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/index.js';
import { pool } from './timing.js';

/** A scratch directory under the system temp dir, removed with `remove()` or, at the latest, on exit. */
export function scratchDir(label: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `holon-bench-${label}-`));
  const remove = () => {
    process.off('exit', remove);
    rmSync(dir, { recursive: true, force: true });
  };
  // A crash or the watchdog exits without running `finally` blocks.
  process.on('exit', remove);
  return { dir, remove };
}

export type StoreKind = 'memory' | 'lowdb';

/** A runtime on an in-memory store or on lowdb in `dataDir`; `Runtime.open` takes the lease itself. */
export function openRuntime(kind: StoreKind, dataDir: string, options: RuntimeOptions = {}): Promise<Runtime> {
  const nodeId = `bench-${process.pid}`;
  return kind === 'memory' ? Runtime.open({ store: new MemoryStore(), nodeId, ...options }) : Runtime.open({ dataDir, nodeId, ...options });
}

/** The configuration every created agent gets (as `CreateAgentRequest.config`). */
type AgentConfig = NonNullable<Parameters<Runtime['createAgent']>[0]['config']>;

/** Creates `count` agents named `<prefix><i>` with `concurrency` creates in flight; returns their ids. */
export async function createAgents(runtime: Runtime, count: number, prefix: string, concurrency = 64, config?: AgentConfig): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  await pool(ids, concurrency, async (id) => {
    await runtime.createAgent({ agent_id: id, mission: 'benchmark', ...(config ? { config } : {}) });
  });
  return ids;
}
