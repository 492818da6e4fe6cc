import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import type { AgentEvent } from '../src/domain/index.js';
import type { Runtime } from '../src/runtime/runtime.js';
import { Activity } from './lib/activity.js';
import { openRuntime, scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { median, pairwiseRatios } from './lib/stats.js';
import { collectGarbage, MiB, RssSampler, until } from './lib/timing.js';

/**
 * Command tasks against the same commands run with plain `child_process.spawn`, measured in the
 * same run:
 *  - 100 concurrent `sh -c 'echo …'` tasks of one agent on the durable (lowdb) runtime, from the
 *    first `execCommand` until every task is terminal. Each run uses a new agent, so runs do not
 *    inherit the previous runs' records. Baseline: 100 concurrent spawns with stdout and
 *    stderr read by Node, until every child closed.
 *  - one task writing 100 MB to stdout: time until terminal, and RSS growth (peak during the task
 *    minus RSS before it, sampled every 10 ms). Baseline: one spawn whose stdout Node pipes into a
 *    file (the runtime keeps the output in an artifact file too).
 */

const RUNS = 5;
const TASKS = 100;
const BIG_BYTES = 100 * 1024 * 1024;
const BIG_CMD = `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${BIG_BYTES}`;
const TIMEOUT_MS = 120_000;

function echoCmd(i: number): string {
  return `echo task ${i} says hello`;
}

function run(cmd: string, outputPath: string | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (outputPath) child.stdout.pipe(createWriteStream(outputPath));
    else child.stdout.resume();
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

async function baselineMany(): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: TASKS }, (_, i) => run(echoCmd(i), null)));
  return performance.now() - started;
}

async function baselineBig(dir: string): Promise<{ ms: number; rssGrowth: number }> {
  collectGarbage();
  const before = process.memoryUsage.rss();
  const sampler = new RssSampler();
  const started = performance.now();
  await run(BIG_CMD, join(dir, 'baseline-big.log'));
  const ms = performance.now() - started;
  return { ms, rssGrowth: sampler.stop() - before };
}

/** Resolves with the terminal statuses once `taskIds` (filled by the caller) are all terminal. */
class TaskWatch {
  private readonly terminal = new Map<string, string>();
  private readonly unsubscribe: () => void;

  constructor(runtime: Runtime, agentId: string) {
    this.unsubscribe = runtime.subscribe(agentId, (event: AgentEvent) => {
      const status = event.payload['status'];
      if (event.type === 'task_status_changed' && typeof status === 'string' && ['completed', 'failed', 'cancelled', 'interrupted'].includes(status)) {
        this.terminal.set(event.payload['task_id'] as string, status);
      }
    });
  }

  async allTerminal(ids: string[]): Promise<void> {
    await until(() => ids.every((id) => this.terminal.has(id)), TIMEOUT_MS, 'tasks to end', 1);
    const failed = ids.filter((id) => this.terminal.get(id) !== 'completed');
    if (failed.length > 0) throw new Error(`${failed.length} task(s) did not complete: ${this.terminal.get(failed[0] as string)}`);
  }

  close(): void {
    this.unsubscribe();
  }
}

async function runtimeMany(runtime: Runtime, activity: Activity, agentId: string): Promise<number> {
  const watch = new TaskWatch(runtime, agentId);
  const started = performance.now();
  const tasks = await Promise.all(Array.from({ length: TASKS }, (_, i) => runtime.execCommand(agentId, { cmd: echoCmd(i), summary: `echo ${i}`, accepts_input: false })));
  await watch.allTerminal(tasks.map((t) => t.id));
  const ms = performance.now() - started;
  watch.close();
  // The task results re-enter the agent as messages: let those turns run before the next measurement.
  await until(() => activity.awakeCount === 0, TIMEOUT_MS, 'task-result turns', 10);
  return ms;
}

async function runtimeBig(runtime: Runtime, activity: Activity, agentId: string): Promise<{ ms: number; rssGrowth: number }> {
  const watch = new TaskWatch(runtime, agentId);
  collectGarbage();
  const before = process.memoryUsage.rss();
  const sampler = new RssSampler();
  const started = performance.now();
  const task = await runtime.execCommand(agentId, { cmd: BIG_CMD, summary: '100 MB of output', accepts_input: false });
  await watch.allTerminal([task.id]);
  const ms = performance.now() - started;
  const rssGrowth = sampler.stop() - before;
  watch.close();
  const output = await runtime.taskOutput(agentId, task.id, { block: false, timeout_ms: 0, max_bytes: 100 });
  if (output.artifact.bytes !== BIG_BYTES) throw new Error(`artifact holds ${output.artifact.bytes} bytes, not ${BIG_BYTES}`);
  await until(() => activity.awakeCount === 0, TIMEOUT_MS, 'task-result turn', 10);
  return { ms, rssGrowth };
}

runBenchmark('tasks', 6 * 60_000, async () => {
  const scratch = scratchDir('tasks');
  const base: number[] = [];
  const many: number[] = [];
  const bigBase: Array<{ ms: number; rssGrowth: number }> = [];
  const big: Array<{ ms: number; rssGrowth: number }> = [];
  const runtime = await openRuntime('lowdb', join(scratch.dir, 'data'));
  const activity = new Activity(runtime);
  const agent = async (id: string): Promise<string> => {
    await runtime.createAgent({ agent_id: id });
    // Every run starts from the same state: an agent that is asleep, so its first task wakes it.
    await until(() => activity.awakeCount === 0, TIMEOUT_MS, 'new agent to sleep', 10);
    return id;
  };
  try {
    // Warm-up: spawn paths, JIT.
    await baselineMany();
    await runtimeMany(runtime, activity, await agent('warm-up'));
    const bigWorker = await agent('big');
    for (let i = 0; i < RUNS; i++) {
      base.push(await baselineMany());
      many.push(await runtimeMany(runtime, activity, await agent(`worker-${i}`)));
      bigBase.push(await baselineBig(scratch.dir));
      big.push(await runtimeBig(runtime, activity, bigWorker));
      progress(`run ${i + 1}/${RUNS}: 100 echo: spawn ${base.at(-1)?.toFixed(0)} ms, runtime ${many.at(-1)?.toFixed(0)} ms; 100 MB: spawn ${bigBase.at(-1)?.ms.toFixed(0)} ms, runtime ${big.at(-1)?.ms.toFixed(0)} ms, +${((big.at(-1)?.rssGrowth ?? 0) / MiB).toFixed(1)} MiB`);
    }
  } finally {
    activity.close();
    await runtime.close().catch(() => undefined);
    scratch.remove();
  }
  const manyRatio = pairwiseRatios(many, base);
  const bigRatio = pairwiseRatios(big.map((b) => b.ms), bigBase.map((b) => b.ms));
  const growth = big.map((b) => b.rssGrowth / MiB);
  return {
    metrics: [
      { name: `baseline: ${TASKS} concurrent spawns (echo)`, unit: 'ms', samples: base },
      { name: `runtime lowdb: ${TASKS} concurrent tasks, one agent`, unit: 'ms', samples: many },
      { name: '  ratio runtime / spawn', unit: '×', samples: manyRatio, target: '≤ 1.5', met: median(manyRatio) <= 1.5 },
      { name: 'baseline: spawn, 100 MB piped to a file', unit: 'ms', samples: bigBase.map((b) => b.ms) },
      { name: '  baseline RSS growth', unit: 'MiB', samples: bigBase.map((b) => b.rssGrowth / MiB) },
      { name: 'runtime lowdb: one task writing 100 MB', unit: 'ms', samples: big.map((b) => b.ms) },
      { name: '  ratio runtime / spawn', unit: '×', samples: bigRatio, target: '≤ 1.5', met: median(bigRatio) <= 1.5 },
      { name: '  runtime RSS growth', unit: 'MiB', samples: growth, target: '≤ 30', met: median(growth) <= 30 },
    ],
    notes: [
      `echo tasks: ${TASKS} execCommand calls issued at once to one (new) agent; time until every task_status_changed is terminal`,
      `100 MB: \`${BIG_CMD}\`; the artifact's size is checked`,
    ],
  };
});
