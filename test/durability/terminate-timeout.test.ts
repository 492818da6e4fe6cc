import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/domain/index.js';
import { processGroupAlive } from '../../src/runtime/process/process-group.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { allEvents, openRuntime, untilAsleep } from '../runtime/helpers.js';
import { readAgent } from './fixtures/data-dir.js';
import { eventually, TempDirs } from './fixtures/harness.js';

/**
 * Seed 002 acceptance 5: an external call timing out during termination leaves a diagnosable
 * state, not a success mark. The hanging side effect: stopping a command whose process group
 * ignores SIGTERM, with `killGraceMs` (SIGTERM → SIGKILL) far longer than `effectTimeoutMs`.
 */

const KILL_GRACE_MS = 2_000;
const EFFECT_TIMEOUT_MS = 200;
const dirs = new TempDirs();
let runtime: Runtime | undefined;
const groups: number[] = [];

afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await dirs.cleanup();
});

/** An agent running a command that ignores SIGTERM; returns the command's process group. */
async function agentWithStubbornTask(rt: Runtime, agentId: string): Promise<number> {
  await rt.createAgent({ agent_id: agentId });
  await untilAsleep(rt, agentId);
  // `trap '' TERM` is inherited by `sleep`: the whole group ignores SIGTERM.
  await rt.prompt(agentId, { text: "/exec trap '' TERM; sleep 30" });
  const running = await eventually(async () =>
    (await allEvents(rt, agentId)).find((e: AgentEvent) => e.type === 'task_status_changed' && e.payload['status'] === 'running' && typeof e.payload['pid'] === 'number'),
  );
  const pid = running.payload['pid'] as number;
  groups.push(pid);
  return pid;
}

describe('scenario 5: terminate while a side effect hangs past its timeout', () => {
  it('ends Recovering or Terminating with the failed phase recorded, not Terminated', async () => {
    const dir = await dirs.make();
    runtime = await openRuntime(dir, { killGraceMs: KILL_GRACE_MS, effectTimeoutMs: EFFECT_TIMEOUT_MS });
    const rt = runtime;
    await agentWithStubbornTask(rt, 'stubborn');
    const baseline = (await allEvents(rt, 'stubborn')).length;

    const summary = await rt.terminate('stubborn');
    expect(summary.phase).not.toBe('terminated');
    expect(['recovering', 'terminating']).toContain(summary.phase);

    const events = (await allEvents(rt, 'stubborn')).slice(baseline);
    const failedPhase = events.find((e) => e.type === 'transition_phase' && e.payload['phase'] === 'side_effects_failed');
    expect(String(failedPhase?.payload['detail'])).toContain('timed out');
    const left = events.find((e) => e.type === 'transition_committed' && e.payload['from_phase'] === 'terminating');
    expect(String(left?.payload['reason'])).toContain('timed out');
    const raw = await readAgent(dir, 'stubborn');
    expect(raw?.doc.state.phase).not.toBe('terminated');
    expect(raw?.doc.failure).toMatchObject({ phase: expect.stringMatching(/terminat|side_effects/) });
    expect(raw?.doc.failure?.reason).toContain('timed out');
  });

  it('the abandoned stop still ends the command, and its task record then settles (not left running)', async () => {
    const dir = await dirs.make();
    runtime = await openRuntime(dir, { killGraceMs: KILL_GRACE_MS, effectTimeoutMs: EFFECT_TIMEOUT_MS });
    const rt = runtime;
    const pid = await agentWithStubbornTask(rt, 'orphan');
    await rt.terminate('orphan');
    // SIGKILL follows SIGTERM after the grace, even though the terminate effect gave up waiting.
    await eventually(async () => !(await processGroupAlive(pid)) || undefined, 10_000, 'the stubborn group is killed');
    await eventually(
      async () => {
        const tasks = (await readAgent(dir, 'orphan'))?.doc.tasks ?? [];
        return tasks.length > 0 && tasks.every((t) => ['completed', 'failed', 'cancelled', 'interrupted'].includes(t.status)) ? true : undefined;
      },
      5_000,
      'the task record settles once its process is gone',
    );
  });

  it('a terminate retried after the hang cleared commits Terminated exactly once', async () => {
    const dir = await dirs.make();
    runtime = await openRuntime(dir, { killGraceMs: KILL_GRACE_MS, effectTimeoutMs: EFFECT_TIMEOUT_MS });
    const rt = runtime;
    const pid = await agentWithStubbornTask(rt, 'retry');
    await rt.terminate('retry');
    await eventually(async () => !(await processGroupAlive(pid)) || undefined, 10_000, 'the stubborn group is killed');
    const final = await rt.terminate('retry');
    expect(final.phase).toBe('terminated');
    expect((await rt.terminate('retry')).phase).toBe('terminated');
    const terminated = (await allEvents(rt, 'retry')).filter((e) => e.type === 'transition_committed' && e.payload['to_phase'] === 'terminated');
    expect(terminated).toHaveLength(1);
  });
});
