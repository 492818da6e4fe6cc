import { describe, expect, it } from 'vitest';
import { decideForMessage, decideIdleSignal, idleBoundaryDecision } from '../../machines/contracts/index.js';
import { ContinuationResolution, type AgentEvent } from '../../src/domain/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { facts, item, wait } from '../contracts/fixtures.js';
import { eventsOfType, eventually, runtimeSession, untilAsleep } from './helpers.js';

/**
 * The scheduler's decision records are the contracts' output (machines/contracts/decision.ts): each
 * recorded decision equals what the contract function returns for the facts the agent had at that
 * point, so the tables in test/contracts/decision.test.ts describe what the runtime does.
 */
describe('scheduler decisions come from the contracts', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  const decisionsAfter = async (agentId: string, seq: number): Promise<unknown[]> =>
    (await eventsOfType(runtime, agentId, 'scheduler_decision')).filter((e) => e.event_seq > seq).map((e) => e.payload);
  const lastSeq = async (agentId: string): Promise<number> => (await runtime.eventsPage(agentId, { order: 'desc', limit: 1 })).newest_seq;
  const resolutionOf = (event: AgentEvent | undefined): ContinuationResolution => {
    const { message_id: _messageId, ...resolution } = event?.payload ?? {};
    return ContinuationResolution.parse(resolution);
  };

  it('a prompt: decideForMessage at the claim, then idleBoundaryDecision (sleep) at the idle boundary', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'p' });
    await untilAsleep(runtime, 'p');
    const seq = await lastSeq('p');
    const { message_id: messageId } = await runtime.prompt('p', { text: 'think about it' });
    await eventually(async () => ((await runtime.getSummary('p')).agent.turn_index > 0 && (await runtime.getSummary('p')).agent.status === 'asleep') || undefined);
    const resolved = (await eventsOfType(runtime, 'p', 'continuation_resolved')).find((e) => e.payload['message_id'] === messageId);
    // At the claim the agent is awake, idle, with the prompt still queued; at the boundary nothing is left.
    expect(await decisionsAfter('p', seq)).toEqual([
      decideForMessage(facts({ status: 'awake_idle', queue: { queued: 1, interrupted: 0 } }), resolutionOf(resolved), messageId),
      idleBoundaryDecision(facts({ status: 'awake_idle' })),
    ]);
    expect((await runtime.getState('p')).last_decision).toMatchObject({ kind: 'sleep', boundary: 'run_loop_idle', liveness_only: true });
  });

  it('a turn that waits on a timer goes to sleep on the wait decision the idle boundary gives', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 't' });
    await untilAsleep(runtime, 't');
    const seq = await lastSeq('t');
    await runtime.prompt('t', { text: '/timer 3600000' });
    const timer = await eventually(async () => (await runtime.listTimers('t')).at(0));
    await eventually(async () => ((await runtime.getSummary('t')).agent.status === 'asleep' && (await runtime.getSummary('t')).agent.turn_index > 0) || undefined);
    const decisions = await decisionsAfter('t', seq);
    const expected = idleBoundaryDecision(facts({ status: 'awake_idle', active_timers: 1, waits: [wait('timer', { subject_ref: timer.id })] }));
    expect(expected).toMatchObject({ kind: 'wait_for_external_change', liveness_only: true });
    expect(decisions.at(-1)).toEqual(expected);
  });

  it('a wake hint to an idle agent: decideIdleSignal(wake_hint) is recorded before its tick is queued', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'w' });
    await untilAsleep(runtime, 'w');
    const seq = await lastSeq('w');
    expect((await runtime.wake('w', { reason: 'a build finished' })).disposition).toBe('triggered');
    await eventually(async () => ((await runtime.getSummary('w')).agent.turn_index > 0 && (await runtime.getSummary('w')).agent.status === 'asleep') || undefined);
    const decisions = await decisionsAfter('w', seq);
    expect(decisions[0]).toEqual(decideIdleSignal(facts({ status: 'asleep' }), { kind: 'wake_hint', duplicate: false }));
    const events = (await eventsOfType(runtime, 'w', 'scheduler_decision')).concat(await eventsOfType(runtime, 'w', 'message_queued')).filter((e) => e.event_seq > seq);
    const first = (type: string) => Math.min(...events.filter((e) => e.type === type).map((e) => e.event_seq));
    expect(first('scheduler_decision')).toBeLessThan(first('message_queued'));
  });

  it('runnable work: decideIdleSignal(continue_active) for the current work item', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'wi' });
    await untilAsleep(runtime, 'wi');
    // A turn creates the item; once it is over, the awake agent's scheduler finds it runnable.
    await runtime.prompt('wi', { text: '/work ship it' });
    const created = await eventually(async () => (await runtime.listWorkItems('wi')).at(0));
    const tick = await eventually(async () => (await eventsOfType(runtime, 'wi', 'scheduler_decision')).map((e) => e.payload).find((d) => d['kind'] === 'emit_system_tick'));
    const current = item(created.id, { plan_status: created.plan_status, created_at: created.created_at, updated_at: created.updated_at });
    expect(tick).toEqual(decideIdleSignal(facts({ status: 'awake_idle', current_work_item_id: created.id, work_items: [current] }), { kind: 'continue_active', duplicate: false }));
    expect(tick).toMatchObject({ kind: 'emit_system_tick', reason: 'continue_active', work_item_id: created.id, model_reentry: true, liveness_only: false });
  });
});
