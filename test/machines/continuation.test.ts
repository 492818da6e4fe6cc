import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { resolveContinuation } from '../../machines/contracts/continuation.js';
import type { ContinuationTrigger } from '../../machines/contracts/continuation.js';
import type { MatchedMessage } from '../../machines/contracts/waits.js';
import { continuationMachine } from '../../machines/continuation.machine.js';
import type { ActiveWait, ContinuationEmitted, ContinuationEvent } from '../../machines/continuation.machine.js';
import type { AgentStatus, ClosureDecision, WaitingReason } from '../../src/domain/index.js';

type WaitState = 'idle' | 'waiting' | 'resolving';
type HintState = 'clear' | 'stored' | 'pending';

const TASK_WAIT: ActiveWait = { waitId: 'w1', kind: 'task', reason: 'build', resource: 't1', workItemId: 'wi1' };
const OTHER_WAIT: ActiveWait = { waitId: 'w2', kind: 'operator', reason: 'approval', resource: null, workItemId: null };

function waitingOn(reason: WaitingReason): ClosureDecision {
  return { outcome: 'waiting', waiting_reason: reason, work_signal: null, runtime_posture: 'sleeping', evidence: [] };
}
const COMPLETED: ClosureDecision = {
  outcome: 'completed',
  waiting_reason: null,
  work_signal: null,
  runtime_posture: 'awake',
  evidence: [],
};

const TASK_RESULT: ContinuationTrigger = { kind: 'task_result', contentful: true, task_terminal: true, same_work_item: true };
const OPERATOR: ContinuationTrigger = { kind: 'operator_input', contentful: true };

/** The messages the triggers come from, as the wait matcher reads them. */
const TASK_RESULT_MESSAGE: MatchedMessage = { kind: 'task_result', origin: { kind: 'task', task_id: 't1' }, task_id: 't1', metadata: {} };
const PROMPT_MESSAGE: MatchedMessage = { kind: 'operator_prompt', origin: { kind: 'operator' }, task_id: null, metadata: {} };

/** A trigger that matches the prior wait (task result awaited) and one that does not (operator interrupts). */
const MATCHED: ContinuationEvent = { type: 'TRIGGER', trigger: TASK_RESULT, prior: waitingOn('awaiting_task_result'), message: TASK_RESULT_MESSAGE };
const MISMATCHED: ContinuationEvent = { type: 'TRIGGER', trigger: OPERATOR, prior: waitingOn('awaiting_task_result'), message: PROMPT_MESSAGE };
/** No prior wait at all: a local continuation, nothing to match. */
const UNWAITED: ContinuationEvent = { type: 'TRIGGER', trigger: OPERATOR, prior: COMPLETED, message: PROMPT_MESSAGE };

function hint(status: AgentStatus, queueDepth = 0, reason = 'pr updated'): ContinuationEvent {
  return { type: 'WAKE_HINT', hint: { reason, source: 'github' }, status, queueDepth };
}

function startContinuation(events: readonly ContinuationEvent[] = []) {
  const emitted: ContinuationEmitted[] = [];
  const actor = createActor(continuationMachine, { input: { agentId: 'a1' } });
  actor.on('*', (event) => emitted.push(event));
  actor.start();
  for (const event of events) actor.send(event);
  return { actor, emitted };
}

const WAIT_ROUTE: Readonly<Record<WaitState, readonly ContinuationEvent[]>> = {
  idle: [],
  waiting: [{ type: 'WAIT.SET', ...TASK_WAIT }],
  resolving: [{ type: 'WAIT.SET', ...TASK_WAIT }, MISMATCHED],
};

const HINT_ROUTE: Readonly<Record<HintState, readonly ContinuationEvent[]>> = {
  clear: [],
  stored: [hint('awake_running', 0, 'first')],
  pending: [hint('asleep', 0, 'first')],
};

function waitState(actor: ReturnType<typeof startContinuation>['actor']): string {
  return (actor.getSnapshot().value as { wait: string }).wait;
}
function hintState(actor: ReturnType<typeof startContinuation>['actor']): string {
  return (actor.getSnapshot().value as { wakeHint: string }).wakeHint;
}

describe('continuation machine: start', () => {
  it('starts idle with a clear hint slot and nothing recorded', () => {
    const { actor } = startContinuation();
    expect(actor.getSnapshot().value).toEqual({ wait: 'idle', wakeHint: 'clear' });
    expect(actor.getSnapshot().context).toEqual({
      agentId: 'a1',
      wait: null,
      resolution: null,
      waitSatisfied: false,
      hint: null,
      lastDisposition: null,
    });
  });
});

describe('continuation machine: the wait region', () => {
  const legal: { from: WaitState; event: ContinuationEvent; to: WaitState; wait: ActiveWait | null }[] = [
    { from: 'idle', event: { type: 'WAIT.SET', ...TASK_WAIT }, to: 'waiting', wait: TASK_WAIT },
    { from: 'idle', event: MATCHED, to: 'resolving', wait: null },
    { from: 'idle', event: MISMATCHED, to: 'resolving', wait: null },
    { from: 'waiting', event: { type: 'WAIT.SET', ...OTHER_WAIT }, to: 'waiting', wait: OTHER_WAIT },
    { from: 'waiting', event: { type: 'WAIT.CANCEL' }, to: 'idle', wait: null },
    { from: 'waiting', event: MATCHED, to: 'resolving', wait: TASK_WAIT },
    { from: 'waiting', event: MISMATCHED, to: 'resolving', wait: TASK_WAIT },
    // Mismatched, with the wait still set: back to waiting.
    { from: 'resolving', event: { type: 'RESOLUTION.APPLIED' }, to: 'waiting', wait: TASK_WAIT },
  ];

  it.each(legal)('$from --[$event.type]--> $to', ({ from, event, to, wait }) => {
    const { actor } = startContinuation(WAIT_ROUTE[from]);
    actor.send(event);
    expect(waitState(actor)).toBe(to);
    expect(actor.getSnapshot().context.wait).toEqual(wait);
    expect(hintState(actor)).toBe('clear');
  });

  const refused: { from: WaitState; event: ContinuationEvent }[] = [
    { from: 'idle', event: { type: 'WAIT.CANCEL' } },
    { from: 'idle', event: { type: 'RESOLUTION.APPLIED' } },
    { from: 'waiting', event: { type: 'RESOLUTION.APPLIED' } },
    { from: 'resolving', event: { type: 'WAIT.SET', ...OTHER_WAIT } },
    { from: 'resolving', event: { type: 'WAIT.CANCEL' } },
    { from: 'resolving', event: MATCHED },
  ];

  it.each(refused)('$from refuses $event.type', ({ from, event }) => {
    const { actor, emitted } = startContinuation(WAIT_ROUTE[from]);
    const before = actor.getSnapshot();
    const seen = emitted.length;
    expect(before.can(event)).toBe(false);
    actor.send(event);
    expect(actor.getSnapshot().value).toEqual(before.value);
    expect(actor.getSnapshot().context).toEqual(before.context);
    expect(emitted).toHaveLength(seen);
  });

  const classified = [
    {
      what: 'a matched wait',
      event: MATCHED,
      trigger: TASK_RESULT,
      fields: { trigger_kind: 'task_result', class: 'resume_expected_wait', model_reentry: true, matched_waiting_reason: true, prior_waiting_reason: 'awaiting_task_result' },
    },
    {
      what: 'a mismatched wait (operator interrupts a task wait)',
      event: MISMATCHED,
      trigger: OPERATOR,
      fields: { trigger_kind: 'operator_input', class: 'resume_override', model_reentry: true, matched_waiting_reason: false },
    },
  ];
  it.each(
    classified.flatMap((row) => [
      { ...row, where: 'idle', route: WAIT_ROUTE.idle },
      { ...row, where: 'waiting', route: WAIT_ROUTE.waiting },
    ]),
  )('TRIGGER in $where classifies $what with resolveContinuation', ({ route, event, trigger, fields }) => {
    const { actor, emitted } = startContinuation(route);
    actor.send(event);
    const resolution = actor.getSnapshot().context.resolution;
    expect(resolution).toEqual(resolveContinuation(trigger, waitingOn('awaiting_task_result')));
    expect(resolution).toMatchObject(fields);
    expect(emitted).toEqual([{ type: 'continuation.resolved', resolution }]);
  });

  it('a liveness-only trigger is classified as such (no model re-entry)', () => {
    const { actor } = startContinuation(WAIT_ROUTE.waiting);
    actor.send({
      type: 'TRIGGER',
      trigger: { kind: 'external_event', contentful: false },
      prior: waitingOn('awaiting_task_result'),
      message: { kind: 'webhook_event', origin: { kind: 'webhook', source: 'ci' }, task_id: null, metadata: {} },
    });
    expect(actor.getSnapshot().context.resolution).toMatchObject({ class: 'liveness_only', model_reentry: false });
  });

  it('RESOLUTION.APPLIED after a matched trigger returns to idle and clears the wait', () => {
    const { actor } = startContinuation([...WAIT_ROUTE.waiting, MATCHED]);
    expect(waitState(actor)).toBe('resolving');
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('idle');
    expect(actor.getSnapshot().context.wait).toBeNull();
  });

  it('RESOLUTION.APPLIED after a mismatched trigger returns to waiting with the same wait', () => {
    const { actor } = startContinuation([...WAIT_ROUTE.waiting, MISMATCHED]);
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('waiting');
    expect(actor.getSnapshot().context.wait).toEqual(TASK_WAIT);
  });

  it('RESOLUTION.APPLIED after a trigger the closure awaited but that does not satisfy the wait record returns to waiting', () => {
    // A task result the closure awaited, for another task than the one this wait holds.
    const other: ContinuationEvent = { ...MATCHED, message: { ...TASK_RESULT_MESSAGE, task_id: 't2', origin: { kind: 'task', task_id: 't2' } } } as ContinuationEvent;
    const { actor } = startContinuation([{ type: 'WAIT.SET', ...TASK_WAIT }, other]);
    expect(actor.getSnapshot().context).toMatchObject({ waitSatisfied: false, resolution: { matched_waiting_reason: true } });
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('waiting');
    expect(actor.getSnapshot().context.wait).toEqual(TASK_WAIT);
  });

  it('RESOLUTION.APPLIED after a trigger that satisfies the wait record (waitMatchesMessage) returns to idle, though the closure did not wait for it', () => {
    // An operator wait, and a prompt after a turn that closed completed: not the awaited reason
    // (resolveContinuation), but the prompt ends the operator wait, as the runtime's records say.
    const { actor } = startContinuation([{ type: 'WAIT.SET', ...OTHER_WAIT }, UNWAITED]);
    expect(actor.getSnapshot().context).toMatchObject({ waitSatisfied: true, resolution: { matched_waiting_reason: false } });
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('idle');
    expect(actor.getSnapshot().context.wait).toBeNull();
  });

  it('RESOLUTION.APPLIED with no wait to return to goes back to idle', () => {
    const { actor } = startContinuation([UNWAITED]);
    expect(actor.getSnapshot().context.resolution?.matched_waiting_reason).toBe(false);
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('idle');
  });

  it('a matched trigger without a machine-level wait also returns to idle', () => {
    const { actor } = startContinuation([MATCHED]);
    actor.send({ type: 'RESOLUTION.APPLIED' });
    expect(waitState(actor)).toBe('idle');
    expect(actor.getSnapshot().context.wait).toBeNull();
  });

  it('a later resolution replaces the earlier one', () => {
    const { actor } = startContinuation([...WAIT_ROUTE.waiting, MISMATCHED, { type: 'RESOLUTION.APPLIED' }, MATCHED]);
    expect(actor.getSnapshot().context.resolution?.matched_waiting_reason).toBe(true);
  });
});

describe('continuation machine: wake hints (liveness only, deduplicated)', () => {
  it('a stopped agent ignores the hint: nothing stored, nothing requested', () => {
    const { actor, emitted } = startContinuation();
    actor.send(hint('stopped'));
    expect(hintState(actor)).toBe('clear');
    expect(actor.getSnapshot().context.hint).toBeNull();
    expect(actor.getSnapshot().context.lastDisposition).toBe('ignored');
    expect(emitted).toEqual([
      { type: 'wake.disposition', disposition: 'ignored', hint: { reason: 'pr updated', source: 'github' } },
    ]);
  });

  it.each([
    { status: 'awake_running', queueDepth: 0 },
    { status: 'awaiting_task', queueDepth: 0 },
    { status: 'awake_idle', queueDepth: 2 },
    { status: 'asleep', queueDepth: 1 },
  ] as const)('a $status agent with queue $queueDepth coalesces and stores the hint', ({ status, queueDepth }) => {
    const { actor, emitted } = startContinuation();
    actor.send(hint(status, queueDepth));
    expect(hintState(actor)).toBe('stored');
    expect(actor.getSnapshot().context.hint).toEqual({ reason: 'pr updated', source: 'github' });
    expect(actor.getSnapshot().context.lastDisposition).toBe('coalesced');
    expect(emitted).toEqual([
      { type: 'wake.disposition', disposition: 'coalesced', hint: { reason: 'pr updated', source: 'github' } },
    ]);
  });

  it.each(['awake_idle', 'asleep', 'booting'] as const)(
    'an idle-like %s agent with an empty queue is triggered and one tick is requested',
    (status) => {
      const { actor, emitted } = startContinuation();
      actor.send(hint(status, 0));
      expect(hintState(actor)).toBe('pending');
      expect(actor.getSnapshot().context.hint).toEqual({ reason: 'pr updated', source: 'github' });
      expect(actor.getSnapshot().context.lastDisposition).toBe('triggered');
      expect(emitted).toEqual([
        { type: 'wake.disposition', disposition: 'triggered', hint: { reason: 'pr updated', source: 'github' } },
        { type: 'wake.tick_requested', hint: { reason: 'pr updated', source: 'github' } },
      ]);
    },
  );

  it('100 duplicate wake hints while one is pending give exactly one tick request (one activation)', () => {
    const { actor, emitted } = startContinuation();
    for (let i = 0; i < 101; i += 1) actor.send(hint('asleep', 0));
    const ticks = emitted.filter((event) => event.type === 'wake.tick_requested');
    expect(ticks).toHaveLength(1);
    const dispositions = emitted.flatMap((event) => (event.type === 'wake.disposition' ? [event.disposition] : []));
    expect(dispositions.filter((d) => d === 'triggered')).toHaveLength(1);
    expect(dispositions.filter((d) => d === 'coalesced')).toHaveLength(100);
    expect(hintState(actor)).toBe('pending');
  });

  it('a pending hint keeps the first hint: duplicates coalesce into it without replacing it', () => {
    const { actor } = startContinuation(HINT_ROUTE.pending);
    actor.send(hint('asleep', 0, 'second'));
    expect(actor.getSnapshot().context.hint?.reason).toBe('first');
    expect(actor.getSnapshot().context.lastDisposition).toBe('coalesced');
  });

  it('a stopped agent ignores hints while one is pending or stored', () => {
    for (const from of ['stored', 'pending'] as const) {
      const { actor, emitted } = startContinuation(HINT_ROUTE[from]);
      const seen = emitted.length;
      actor.send(hint('stopped', 0, 'late'));
      expect(hintState(actor)).toBe(from);
      expect(actor.getSnapshot().context.hint?.reason).toBe('first');
      expect(actor.getSnapshot().context.lastDisposition).toBe('ignored');
      expect(emitted.slice(seen)).toEqual([
        { type: 'wake.disposition', disposition: 'ignored', hint: { reason: 'late', source: 'github' } },
      ]);
    }
  });

  it('a stored hint is replaced by the latest one (level-triggered), even from an idle agent', () => {
    const { actor, emitted } = startContinuation(HINT_ROUTE.stored);
    actor.send(hint('awake_idle', 0, 'second'));
    expect(hintState(actor)).toBe('stored');
    expect(actor.getSnapshot().context.hint?.reason).toBe('second');
    expect(actor.getSnapshot().context.lastDisposition).toBe('coalesced');
    // Reported as coalesced, not triggered: a stored hint only becomes a tick on HINT.FLUSH.
    expect(emitted).toEqual([
      { type: 'wake.disposition', disposition: 'coalesced', hint: { reason: 'first', source: 'github' } },
      { type: 'wake.disposition', disposition: 'coalesced', hint: { reason: 'second', source: 'github' } },
    ]);
  });

  it('HINT.FLUSH turns the stored hint into one tick request', () => {
    const { actor, emitted } = startContinuation(HINT_ROUTE.stored);
    actor.send({ type: 'HINT.FLUSH' });
    expect(hintState(actor)).toBe('pending');
    expect(emitted.at(-1)).toEqual({ type: 'wake.tick_requested', hint: { reason: 'first', source: 'github' } });
    actor.send({ type: 'HINT.FLUSH' });
    expect(emitted.filter((event) => event.type === 'wake.tick_requested')).toHaveLength(1);
  });

  it('TICK.CONSUMED clears the pending hint, and the next hint triggers again', () => {
    const { actor, emitted } = startContinuation(HINT_ROUTE.pending);
    actor.send({ type: 'TICK.CONSUMED' });
    expect(hintState(actor)).toBe('clear');
    expect(actor.getSnapshot().context.hint).toBeNull();
    actor.send(hint('asleep', 0, 'again'));
    expect(hintState(actor)).toBe('pending');
    expect(emitted.filter((event) => event.type === 'wake.tick_requested')).toEqual([
      { type: 'wake.tick_requested', hint: { reason: 'first', source: 'github' } },
      { type: 'wake.tick_requested', hint: { reason: 'again', source: 'github' } },
    ]);
  });

  it.each([
    { from: 'clear', event: { type: 'TICK.CONSUMED' } },
    { from: 'clear', event: { type: 'HINT.FLUSH' } },
    { from: 'stored', event: { type: 'TICK.CONSUMED' } },
    { from: 'pending', event: { type: 'HINT.FLUSH' } },
  ] as const)('$from refuses $event.type', ({ from, event }) => {
    const { actor, emitted } = startContinuation(HINT_ROUTE[from]);
    const before = actor.getSnapshot();
    const seen = emitted.length;
    expect(before.can(event)).toBe(false);
    actor.send(event);
    expect(actor.getSnapshot().value).toEqual(before.value);
    expect(actor.getSnapshot().context).toEqual(before.context);
    expect(emitted).toHaveLength(seen);
  });

  it('the two regions are independent: a wake hint does not disturb a wait, a trigger does not touch the hint', () => {
    const { actor } = startContinuation([...WAIT_ROUTE.waiting, ...HINT_ROUTE.pending, MISMATCHED]);
    expect(actor.getSnapshot().value).toEqual({ wait: 'resolving', wakeHint: 'pending' });
    expect(actor.getSnapshot().context.wait).toEqual(TASK_WAIT);
    expect(actor.getSnapshot().context.hint?.reason).toBe('first');
  });
});
