import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { linesOf, readAgent } from './fixtures/data-dir.js';
import { eventually, settled, sleep, TempDirs, Workers } from './fixtures/harness.js';
import { Prng, seedFromEnv } from './fixtures/prng.js';
import type { CrashRuleInput } from './fixtures/protocol.js';
import type { RuntimeWorker } from './fixtures/worker-client.js';

/**
 * Seed 002 acceptance 6: recovery replay never repeats a side effect that already happened. The
 * effect is a command appending one line to a file; the worker is SIGKILLed around its ledger
 * records (fault-injected exactly, and at random moments), restarted, and left to settle.
 * Policy under test (issue 4): a command recorded as started but not as finished becomes
 * `interrupted` and is never re-run.
 */

const dirs = new TempDirs();
let workers: Workers;

afterEach(async () => {
  await workers?.cleanup();
  await dirs.cleanup();
});

interface Outcome {
  lines: number;
  task: string | undefined;
  effect: string | undefined;
}

/** How often `marker` was appended, and what the records say about its task and effect. */
async function outcome(dataDir: string, agentId: string, file: string, marker: string): Promise<Outcome> {
  const lines = (await linesOf(file)).filter((line) => line === marker).length;
  const doc = (await readAgent(dataDir, agentId))?.doc;
  const task = doc?.tasks.find((t) => t.cmd?.includes(marker));
  const effect = task ? doc?.effects.find((e) => e.idempotency_key === `start_command:${task.id}`) : undefined;
  return { lines, task: task?.status, effect: effect?.status };
}

/** Waits until the file no longer grows: an orphaned command of the killed worker may still be writing. */
async function quiet(file: string): Promise<void> {
  let before = -1;
  for (;;) {
    const now = (await linesOf(file)).length;
    if (now === before) return;
    before = now;
    await sleep(150);
  }
}

async function freshAgent(dataDir: string): Promise<RuntimeWorker> {
  workers = new Workers({ dataDir, nodeId: 'fx', leaseTtlMs: 300 });
  const worker = await workers.open();
  await worker.call('createAgent', { agent_id: 'fx' });
  await settled(worker, 'fx');
  return worker;
}

const points: Array<{ name: string; rule: CrashRuleInput; expected: Outcome }> = [
  {
    name: 'start recorded, command not spawned',
    rule: { at: 'after_commit', event: { type: 'task_status_changed', payload: { status: 'queued' } } },
    expected: { lines: 0, task: 'interrupted', effect: 'in_doubt_resolved' },
  },
  {
    name: 'command spawned, running not recorded',
    rule: { at: 'before_commit', event: { type: 'task_status_changed', payload: { status: 'running' } } },
    expected: { lines: 1, task: 'interrupted', effect: 'in_doubt_resolved' },
  },
  {
    name: 'running recorded (effect done), result not recorded',
    rule: { at: 'after_commit', event: { type: 'task_status_changed', payload: { status: 'running' } } },
    expected: { lines: 1, task: 'interrupted', effect: 'done' },
  },
  {
    name: 'result recorded, its turn not yet run',
    rule: { at: 'after_commit', event: { type: 'task_status_changed', payload: { status: 'completed' } } },
    expected: { lines: 1, task: 'completed', effect: 'done' },
  },
  {
    name: 'crash in Waking with the prompt queued',
    rule: { at: 'after_commit', event: { type: 'transition_committed', payload: { to_phase: 'waking' } } },
    expected: { lines: 1, task: 'completed', effect: 'done' },
  },
];

describe('scenario 6: recovery replay after a crash around a side effect', () => {
  it('SIGKILL at each ledger boundary of a command: it ran at most once, in-doubt starts become interrupted, never re-run', async () => {
    const dataDir = await dirs.make();
    const outDir = await dirs.make('holon-dur-out-');
    let worker = await freshAgent(dataDir);
    for (const [i, point] of points.entries()) {
      const file = join(outDir, `point-${i}.out`);
      const marker = `point-${i}`;
      await worker.arm([point.rule]);
      await worker.call('prompt', 'fx', { text: `/exec echo ${marker} >> ${file}` });
      const exit = await Promise.race([worker.exited, sleep(15_000).then(() => null)]);
      expect(exit?.signal, `${point.name}: the crash point was reached`).toBe('SIGKILL');
      await quiet(file);
      worker = await workers.open();
      await settled(worker, 'fx');
      await quiet(file);
      expect(await outcome(dataDir, 'fx', file, marker), point.name).toEqual(point.expected);
    }
    // Nothing is replayed later either (a second restart re-runs recovery over the same ledger).
    await worker.kill();
    worker = await workers.open();
    await settled(worker, 'fx');
    for (const [i, point] of points.entries()) {
      const file = join(outDir, `point-${i}.out`);
      expect((await linesOf(file)).length, point.name).toBe(point.expected.lines);
    }
  });

  it('SIGKILL at random moments after a prompt: no command line ever appears twice; completed tasks appear exactly once', async () => {
    const seed = seedFromEnv();
    const rng = new Prng(seed);
    console.log(`effect-replay seed=${seed}`);
    const dataDir = await dirs.make();
    const outDir = await dirs.make('holon-dur-out-');
    const file = join(outDir, 'random.out');
    let worker = await freshAgent(dataDir);
    const seen: string[] = [];
    for (let i = 0; i < 6; i++) {
      const marker = `random-${i}`;
      worker.send({ op: 'call', method: 'prompt', args: ['fx', { text: `/exec echo ${marker} >> ${file}` }] });
      await sleep(rng.int(0, 120));
      await worker.kill();
      await quiet(file);
      worker = await workers.open();
      await eventually(async () => (await settled(worker, 'fx', 15_000)) && true);
      await quiet(file);
      const result = await outcome(dataDir, 'fx', file, marker);
      seen.push(`${marker}:${result.lines}/${result.task ?? 'no task'}/${result.effect ?? '-'}`);
      expect(result.lines, marker).toBeLessThanOrEqual(1);
      if (result.task === 'completed') expect(result.lines, marker).toBe(1);
      if (result.task === undefined) expect(result.lines, marker).toBe(0);
    }
    console.log(`effect-replay outcomes: ${seen.join(', ')}`);
    const all = await linesOf(file);
    expect(new Set(all).size).toBe(all.length);
  });
});
