import type { Runtime } from '../../src/runtime/runtime.js';
import { Activity } from './activity.js';
import { createAgents } from './fixtures.js';
import { progress } from './harness.js';
import { pool, until } from './timing.js';

/** Durable operations per measurement (`CLUSTER_OPS`), over `OPS_AGENTS` agents, `CONCURRENCY` in flight. */
const OPS = Number(process.env['CLUSTER_OPS'] ?? 2_000);
const OPS_AGENTS = 100;
const CONCURRENCY = 64;

/** Resolves once every agent of `runtime` sleeps. */
export async function settle(runtime: Runtime): Promise<void> {
  const activity = new Activity(runtime);
  await until(() => activity.awakeCount === 0, 600_000, 'agents to sleep', 50);
}

/** Durable prompts and wakes (each awaited until acknowledged), `CONCURRENCY` in flight over `OPS_AGENTS` agents. */
export async function throughput(runtime: Runtime): Promise<{ prompt: number; wake: number }> {
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

export type Ops = { prompt: number; wake: number };

/**
 * The durable throughput of both stores, interleaved A B B A (`pairs` times) so that the machine's
 * drift falls on both alike: each ratio is PostgreSQL's two runs over lowdb's two.
 */
export async function interleavedThroughput(pgRuntime: Runtime, lowdb: Runtime, pairs: number): Promise<{ pg: Ops[]; lowdb: Ops[]; ratios: Ops[] }> {
  const pg: Ops[] = [];
  const low: Ops[] = [];
  const ratios: Ops[] = [];
  for (let i = 0; i < pairs; i++) {
    const a1 = await throughput(pgRuntime);
    const b1 = await throughput(lowdb);
    const b2 = await throughput(lowdb);
    const a2 = await throughput(pgRuntime);
    pg.push(a1, a2);
    low.push(b1, b2);
    ratios.push({ prompt: (a1.prompt + a2.prompt) / (b1.prompt + b2.prompt), wake: (a1.wake + a2.wake) / (b1.wake + b2.wake) });
    progress(`durable ops, pair ${i + 1}/${pairs}: PostgreSQL / lowdb prompt ${ratios.at(-1)?.prompt.toFixed(3)}, wake ${ratios.at(-1)?.wake.toFixed(3)}`);
  }
  return { pg, lowdb: low, ratios };
}
