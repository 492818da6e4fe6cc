import { describe, expect, it } from 'vitest';
import { processGroupAlive } from '../../src/runtime/process/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventsOfType, eventually, untilAsleep, runtimeSession } from './helpers.js';

describe('Start / Stop (seed 000 lifecycle control)', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('Stop interrupts a running task, revokes the trigger and keeps the queue; Start runs no turn by itself', async () => {
    runtime = await session.open();
    const { external_trigger } = await runtime.createAgent({ agent_id: 'stopper' });
    await untilAsleep(runtime, 'stopper');
    const task = await runtime.execCommand('stopper', { summary: 'long sleep', cmd: 'sleep 30', accepts_input: false });
    const running = await eventually(async () => {
      const t = await runtime.getTask('stopper', task.id);
      return t.status === 'running' ? t : undefined;
    });
    const pid = (await eventsOfType(runtime, 'stopper', 'task_status_changed')).map((e) => e.payload['pid']).find((p) => typeof p === 'number') as number;
    expect(running.status).toBe('running');
    expect(await processGroupAlive(pid)).toBe(true);

    const stopped = await runtime.control('stopper', { action: 'stop' });
    expect(stopped.agent.status).toBe('stopped');
    expect(stopped.phase).toBe('active');
    const after = await runtime.getTask('stopper', task.id);
    expect(after.status).toBe('interrupted');
    expect(after.reason).toBe('agent_stopped');
    expect(await processGroupAlive(pid)).toBe(false);
    expect(stopped.active_external_triggers).toEqual([]);

    // A wake to a stopped agent is ignored, and its revoked capability URL is refused.
    expect((await runtime.wake('stopper', { reason: 'ping' })).disposition).toBe('ignored');
    await expect(runtime.deliverCallback('wake_hint', external_trigger.token, { content_type: null, body: Buffer.from('x') })).rejects.toMatchObject({ code: 'forbidden' });
    // Messages to a stopped agent fail and queue nothing.
    await expect(runtime.prompt('stopper', { text: 'hello' })).rejects.toMatchObject({ code: 'agent_stopped' });
    expect((await runtime.getState('stopper')).queue).toEqual([]);

    const turnsBeforeStart = (await eventsOfType(runtime, 'stopper', 'turn_started')).length;
    const started = await runtime.control('stopper', { action: 'start' });
    expect(started.agent.status).toBe('awake_idle');
    await untilAsleep(runtime, 'stopper');
    expect((await eventsOfType(runtime, 'stopper', 'turn_started')).length).toBe(turnsBeforeStart);
  });

  it('Stop keeps queued messages; Start hands them back to the scheduler', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'keeper' });
    await untilAsleep(runtime, 'keeper');
    await runtime.control('keeper', { action: 'stop' });
    // A public enqueue to a stopped agent is refused too; nothing is lost that was accepted.
    await expect(runtime.enqueue('keeper', { kind: 'webhook_event', priority: 'normal', text: 'x' })).rejects.toMatchObject({ code: 'agent_stopped' });
    await runtime.control('keeper', { action: 'start' });
    const accepted = await runtime.prompt('keeper', { text: 'after start' });
    const turns = await eventually(async () => {
      const started = await eventsOfType(runtime, 'keeper', 'turn_started');
      return started.find((e) => e.payload['message_id'] === accepted.message_id);
    });
    expect(turns.payload['message_id']).toBe(accepted.message_id);
  });

  it('a stale expected_version is refused with version_conflict and changes nothing', async () => {
    runtime = await session.open();
    const { agent } = await runtime.createAgent({ agent_id: 'versioned' });
    await untilAsleep(runtime, 'versioned');
    const current = (await runtime.getSummary('versioned')).state_version;
    expect(current).toBeGreaterThan(agent.state_version);
    await expect(runtime.control('versioned', { action: 'stop', expected_version: agent.state_version })).rejects.toMatchObject({
      code: 'version_conflict',
      details: { current_version: current },
    });
    expect((await runtime.getSummary('versioned')).agent.status).toBe('asleep');
  });
});
