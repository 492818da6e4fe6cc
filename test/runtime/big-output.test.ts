import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventsOfType, eventually, openRuntime, tempDataDir, untilAsleep, runtimeSession } from './helpers.js';

const FIFTY_MB = 50 * 1024 * 1024;

describe('command task output (seed 004 TaskOutput)', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('a task producing 50 MB keeps memory growth under 20 MB while the artifact holds all 50 MB', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'loud' });
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const task = await runtime.execCommand('loud', { summary: '50 MB', cmd: `head -c ${FIFTY_MB} /dev/zero | tr '\\0' 'a'`, accepts_input: false });
    const done = await eventually(async () => {
      const t = await runtime.getTask('loud', task.id);
      return t.status === 'completed' ? t : undefined;
    }, 60_000);
    clearInterval(sampler);
    expect(done.output_bytes).toBe(FIFTY_MB);
    expect((await stat(join(session.dir, 'artifacts', 'loud', `${task.id}.log`))).size).toBe(FIFTY_MB);
    const output = await runtime.taskOutput('loud', task.id, { block: false, timeout_ms: 0, max_bytes: 8000 });
    expect(output.output_preview.length).toBeLessThanOrEqual(8000);
    expect(output.truncated).toBe(true);
    expect(output.artifact.bytes).toBe(FIFTY_MB);
    expect(peak - before).toBeLessThan(20 * 1024 * 1024);
  }, 90_000);

  it('TaskOutput block=true waits for new output; ListTasks shows only non-terminal tasks; input needs accepts_input', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'io' });
    const cat = await runtime.execCommand('io', { summary: 'cat', cmd: 'cat', accepts_input: true });
    const plain = await runtime.execCommand('io', { summary: 'no input', cmd: 'sleep 5', accepts_input: false });
    await eventually(async () => ((await runtime.listTasks('io')).filter((t) => t.status === 'running').length === 2 ? true : undefined));
    const waiting = runtime.taskOutput('io', cat.id, { block: true, timeout_ms: 5_000, max_bytes: 8000 });
    const input = await runtime.taskInput('io', cat.id, { text: 'ping\n' });
    expect(input.accepted_input).toBe(true);
    expect(input.bytes_written).toBe(5);
    const seen = await waiting;
    expect(seen.retrieval_status).toBe('success');
    expect(seen.output_preview).toContain('ping');
    await expect(runtime.taskInput('io', plain.id, { text: 'x' })).rejects.toMatchObject({ code: 'task_not_accepting_input' });
    const stop = await runtime.stopTask('io', plain.id);
    expect(stop.stop_requested).toBe(true);
    await eventually(async () => ((await runtime.getTask('io', plain.id)).status === 'cancelled' ? true : undefined));
    const listed = await runtime.listTasks('io');
    expect(listed.map((t) => t.id)).toEqual([cat.id]);
    const timedOut = await runtime.taskOutput('io', cat.id, { block: true, timeout_ms: 100, max_bytes: 8000 });
    expect(timedOut.retrieval_status).toBe('timeout');
    await expect(runtime.getTask('io', 'task_missing')).rejects.toMatchObject({ code: 'task_not_found' });
  });

  it('timeout_ms fails a task with reason timeout', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'slow' });
    const task = await runtime.execCommand('slow', { summary: 'too slow', cmd: 'sleep 30', accepts_input: false, timeout_ms: 200 });
    const failed = await eventually(async () => {
      const t = await runtime.getTask('slow', task.id);
      return t.status === 'failed' ? t : undefined;
    });
    expect(failed.reason).toBe('timeout');
  });
});

describe('a command that cannot start', () => {
  it('fails from Queued with reason spawn_failed, and the task actor agrees', async () => {
    const dir = tempDataDir();
    const runtime = await openRuntime(dir.dir);
    try {
      await runtime.createAgent({ agent_id: 'nowhere' });
      const task = await runtime.execCommand('nowhere', { summary: 'bad cwd', cmd: 'true', workdir: '/nonexistent/dir', accepts_input: false });
      const failed = await eventually(async () => {
        const t = await runtime.getTask('nowhere', task.id);
        return t.status === 'failed' ? t : undefined;
      });
      expect(failed.reason).toBe('spawn_failed');
      const running = (await eventsOfType(runtime, 'nowhere', 'task_status_changed')).filter((e) => e.payload['status'] === 'running');
      expect(running).toEqual([]);
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});

describe('tasks on a sleeping agent', () => {
  it('a task requested right after creation (the agent falling asleep) wakes it in the same operation', async () => {
    const dir = tempDataDir();
    const runtime = await openRuntime(dir.dir);
    try {
      for (let i = 0; i < 5; i++) {
        await runtime.createAgent({ agent_id: `eager-${i}` });
        const task = await runtime.execCommand(`eager-${i}`, { summary: 'at once', cmd: 'true', accepts_input: false });
        expect(task.status).toBe('queued');
      }
      await untilAsleep(runtime, 'eager-4');
      const asleepFirst = await runtime.execCommand('eager-4', { summary: 'after sleep', cmd: 'true', accepts_input: false });
      expect(asleepFirst.status).toBe('queued');
      const wakes = (await eventsOfType(runtime, 'eager-4', 'transition_committed')).filter((e) => e.payload['to_state'] === 'waking');
      expect(wakes.length).toBeGreaterThan(0);
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});
