import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventsOfType, eventually, untilAsleep, runtimeSession } from './helpers.js';

describe('wake hints and capability URLs (seed 003)', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('50 duplicate wakes to a sleeping agent produce exactly one activation', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'sleeper' });
    await untilAsleep(runtime, 'sleeper');
    const before = (await eventsOfType(runtime, 'sleeper', 'turn_started')).length;
    const results = await Promise.all(Array.from({ length: 50 }, () => runtime.wake('sleeper', { reason: 'same external change' })));
    const counts = results.reduce<Record<string, number>>((acc, r) => ({ ...acc, [r.disposition]: (acc[r.disposition] ?? 0) + 1 }), {});
    expect(counts).toEqual({ triggered: 1, coalesced: 49 });
    await eventually(async () => ((await eventsOfType(runtime, 'sleeper', 'turn_started')).length > before ? true : undefined));
    await untilAsleep(runtime, 'sleeper');
    const turns = (await eventsOfType(runtime, 'sleeper', 'turn_started')).length - before;
    expect(turns).toBe(1);
    const wakes = (await eventsOfType(runtime, 'sleeper', 'transition_committed')).filter((e) => e.payload['to_state'] === 'waking');
    expect(wakes).toHaveLength(1);
  });

  it('the disposition table: awaiting a task → coalesced and replayed once idle; stopped → ignored', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'busy' });
    await untilAsleep(runtime, 'busy');
    // A task that runs a while keeps the agent awaiting it; long enough that the hint is replayed
    // before the task's result arrives even on a loaded machine (the order this test is about).
    await runtime.prompt('busy', { text: '/exec-wait sleep 3' });
    await eventually(async () => ((await runtime.getSummary('busy')).agent.status === 'awaiting_task' ? true : undefined));
    const queued = await runtime.wake('busy', { reason: 'while waiting on a task' });
    expect(queued.disposition).toBe('coalesced');
    // The stored hint is replayed as one tick once the turn is over. The agent is still waiting
    // for its task, so the hint does not satisfy that wait: liveness only (holon-reference §5 B3).
    const tick = await eventually(async () =>
      (await eventsOfType(runtime, 'busy', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'system_tick'),
    );
    expect(tick.payload).toMatchObject({ class: 'liveness_only', model_reentry: false, prior_waiting_reason: 'awaiting_task_result' });
    await untilAsleep(runtime, 'busy');
    await runtime.control('busy', { action: 'stop' });
    expect((await runtime.wake('busy', { reason: 'stopped' })).disposition).toBe('ignored');
  });

  it('callback URLs: wake_hint token wakes, wrong mode and unknown tokens are forbidden, rotate revokes the old token', async () => {
    runtime = await session.open();
    const { external_trigger } = await runtime.createAgent({ agent_id: 'hooked' });
    expect(external_trigger.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await untilAsleep(runtime, 'hooked');
    const body = { content_type: 'text/plain', body: Buffer.from('build finished') };
    const delivered = await runtime.deliverCallback('wake_hint', external_trigger.token, body);
    expect(delivered.disposition).toBe('triggered');
    await expect(runtime.deliverCallback('enqueue_message', external_trigger.token, body)).rejects.toMatchObject({ code: 'forbidden' });
    await expect(runtime.deliverCallback('wake_hint', 'x'.repeat(43), body)).rejects.toMatchObject({ code: 'forbidden' });
    const enqueueCap = await runtime.createTrigger('hooked', { delivery_mode: 'enqueue_message' });
    const enqueued = await runtime.deliverCallback('enqueue_message', enqueueCap.token, { content_type: 'application/json', body: Buffer.from('{"pr":42}') });
    expect(enqueued.disposition).toBe('enqueued');
    expect(enqueued.message_id).toBeDefined();
    const rotated = await runtime.resetCallback('hooked');
    expect(rotated.token).not.toBe(external_trigger.token);
    await expect(runtime.deliverCallback('wake_hint', external_trigger.token, body)).rejects.toMatchObject({ code: 'forbidden' });
    expect((await runtime.deliverCallback('wake_hint', rotated.token, body)).agent_id).toBe('hooked');
    // Tokens are stored only as hashes: the raw token is nowhere in the agent's records.
    const summary = JSON.stringify(await runtime.getState('hooked'));
    expect(summary).not.toContain(rotated.token);
    const revoked = await runtime.revokeTrigger('hooked', enqueueCap.trigger.id);
    expect(revoked.status).toBe('revoked');
    await expect(runtime.deliverCallback('enqueue_message', enqueueCap.token, body)).rejects.toMatchObject({ code: 'forbidden' });
  });
});
