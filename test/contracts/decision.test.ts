import { describe, expect, it } from 'vitest';
import { SchedulerDecision } from '../../src/domain/index.js';
import type { ContinuationResolution, SchedulerFacts } from '../../src/domain/index.js';
import {
  canSleep,
  decideForMessage,
  decideIdleSignal,
  hasActiveTasks,
  hasQueuedInput,
  hasRunnableWork,
  idleBoundaryDecision,
  waitDecision,
} from '../../machines/contracts/index.js';
import type { IdleSignal } from '../../machines/contracts/index.js';
import { T1, T2, facts, item, named, task, wait } from './fixtures.js';

/** An expected decision: liveness-only exactly when it does not re-enter the model (seed 003). */
function decision(
  kind: SchedulerDecision['kind'],
  reason: string,
  patch: Partial<Omit<SchedulerDecision, 'liveness_only'>> = {},
): SchedulerDecision {
  const model_reentry = patch.model_reentry ?? false;
  return { kind, reason, evidence: [], ...patch, model_reentry, liveness_only: !model_reentry };
}

function expectDecision(result: SchedulerDecision | null, expected: SchedulerDecision | null): void {
  expect(result).toStrictEqual(expected);
  if (result !== null) expect(SchedulerDecision.safeParse(result).success).toBe(true);
  // Seed 003: model_reentry=false is a liveness check, whatever the decision's kind.
  if (result !== null) expect(result.liveness_only).toBe(!result.model_reentry);
}

/** The current item w1 waits on task t9. */
const taskWaiting = {
  current_work_item_id: 'w1',
  work_items: [item('w1')],
  waits: [wait('task', { work_item_id: 'w1', subject_ref: 't9' })],
};

interface WaitRow {
  rule: string;
  facts: SchedulerFacts;
  expected: SchedulerDecision | null;
}

const waitRows: WaitRow[] = [
  { rule: 'ref§6.3 nothing waiting → no wait decision', facts: facts(), expected: null },
  {
    rule: 'ref§6.3 interrupted queue entries pending replay → no wait decision',
    facts: facts({ queue: { queued: 0, interrupted: 1 }, waits: [wait('external')] }),
    expected: null,
  },
  {
    rule: 'ref§6.3 a work reactivation signal → no wait decision',
    facts: facts({ work_items: [item('w1')], waits: [wait('external')], active_timers: 1 }),
    expected: null,
  },
  {
    rule: 'ref§6.3 queued (not interrupted) entries do not hide the wait decision',
    facts: facts({ queue: { queued: 2, interrupted: 0 }, waits: [wait('external')] }),
    expected: decision('wait_for_external_change', 'active_agent_waiting_intents', {
      evidence: ['active_agent_waiting_intents=1'],
    }),
  },
  {
    rule: 'ref§6.3 agent-level waits of any kind → wait_for_external_change, over timers and item waits',
    facts: facts({ ...taskWaiting, waits: [...taskWaiting.waits, wait('operator'), wait('timer')], active_timers: 1 }),
    expected: decision('wait_for_external_change', 'active_agent_waiting_intents', {
      evidence: ['active_agent_waiting_intents=2'],
    }),
  },
  {
    rule: 'seed000 an agent-level wait on a task result → wait_for_task, over other agent-level waits',
    facts: facts({ waits: [wait('external'), wait('task', { subject_ref: 'task-1' })], active_timers: 1 }),
    expected: decision('wait_for_task', 'active_agent_task_wait', { task_id: 'task-1', evidence: ['active_agent_task_wait=1'] }),
  },
  {
    rule: 'ref§6.3 active timers → wait_for_timer, over a waiting work item',
    facts: facts({ ...taskWaiting, active_timers: 3 }),
    expected: decision('wait_for_timer', 'active_timers', { evidence: ['active_timers=3'] }),
  },
  {
    rule: 'ref§6.3 current needs_input item → wait_for_operator',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: decision('wait_for_operator', 'work_item_needs_input', { work_item_id: 'w1' }),
  },
  {
    rule: 'ref§6.3 a queued needs_input item without waits is not waited on',
    facts: facts({ work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: null,
  },
  {
    rule: 'ref§6.3 item task wait → wait_for_task with the task id',
    facts: facts(taskWaiting),
    expected: decision('wait_for_task', 'work_item_waiting_task', { work_item_id: 'w1', task_id: 't9' }),
  },
  {
    rule: 'ref§6.3 the task id comes from the task wait, not from other waits of the item',
    facts: facts({
      work_items: [item('w1')],
      waits: [wait('external', { work_item_id: 'w1', subject_ref: 'pr-1' }), wait('task', { work_item_id: 'w1', subject_ref: 't9' })],
    }),
    expected: decision('wait_for_task', 'work_item_waiting_task', { work_item_id: 'w1', task_id: 't9' }),
  },
  {
    rule: 'ref§6.3 item task wait without a subject → wait_for_task without task id',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: decision('wait_for_task', 'work_item_waiting_task', { work_item_id: 'w1' }),
  },
  {
    rule: 'ref§6.3 item external wait → wait_for_external_change',
    facts: facts({ work_items: [item('w1')], waits: [wait('external', { work_item_id: 'w1', subject_ref: 'pr' })] }),
    expected: decision('wait_for_external_change', 'work_item_waiting_external', { work_item_id: 'w1' }),
  },
  {
    rule: 'ref§6.3 item timer wait → wait_for_timer',
    facts: facts({ work_items: [item('w1')], waits: [wait('timer', { work_item_id: 'w1', subject_ref: 'tm' })] }),
    expected: decision('wait_for_timer', 'work_item_waiting_timer', { work_item_id: 'w1' }),
  },
  {
    rule: 'ref§6.3 item system wait → emit_system_tick (liveness only)',
    facts: facts({ work_items: [item('w1')], waits: [wait('system', { work_item_id: 'w1' })] }),
    expected: decision('emit_system_tick', 'work_item_system_wait', { work_item_id: 'w1' }),
  },
];

describe('waitDecision', () => {
  it.each(named(waitRows))('%s', (_rule, { facts: given, expected }) => {
    expectDecision(waitDecision(given), expected);
  });
});

const idle = { boundary: 'run_loop_idle' } as const;

const idleRows: WaitRow[] = [
  {
    rule: 'ref§6.4 stopped → stop (liveness only), over waits and work',
    facts: facts({ ...taskWaiting, status: 'stopped', work_items: [item('w2')] }),
    expected: decision('stop', 'agent_stopped', idle),
  },
  {
    rule: 'ref§6.4 a wait decision applies at the idle boundary',
    facts: facts({ ...taskWaiting, queue: { queued: 1, interrupted: 0 } }),
    expected: decision('wait_for_task', 'work_item_waiting_task', { work_item_id: 'w1', task_id: 't9', ...idle }),
  },
  {
    rule: 'ref§6.4 runnable work → emit_system_tick runnable_work with model re-entry',
    facts: facts({ work_items: [item('w2', {}, T2), item('w1', {}, T1)], waits: [wait('external')] }),
    expected: decision('emit_system_tick', 'runnable_work', {
      model_reentry: true,
      work_item_id: 'w1',
      evidence: ['reactivation_mode=activate_queued'],
      ...idle,
    }),
  },
  {
    rule: 'ref§6.4 queued input → noop queue_not_empty',
    facts: facts({ queue: { queued: 1, interrupted: 0 } }),
    expected: decision('noop', 'queue_not_empty', idle),
  },
  {
    rule: 'ref§6.4 interrupted entries (replay pending) → noop queue_not_empty, even with waits',
    facts: facts({ queue: { queued: 0, interrupted: 1 }, waits: [wait('external')] }),
    expected: decision('noop', 'queue_not_empty', idle),
  },
  {
    rule: 'ref§6.4 turn in progress → noop turn_in_progress',
    facts: facts({ status: 'awake_running', current_run_id: 'run-1' }),
    expected: decision('noop', 'turn_in_progress', idle),
  },
  {
    rule: 'ref§6.4 already asleep → stay_idle',
    facts: facts({ status: 'asleep', pending_wake_hint: true }),
    expected: decision('stay_idle', 'already_asleep', idle),
  },
  {
    rule: 'seed000 AwaitingTask: active tasks keep the agent awake → wait_for_task on the first active task',
    facts: facts({ tasks: [task('t1', 'completed'), task('t2', 'running'), task('t3', 'queued')], pending_wake_hint: true }),
    expected: decision('wait_for_task', 'active_tasks', { task_id: 't2', ...idle }),
  },
  {
    rule: 'ref§6.6 a pending wake hint is emitted by the idle tick, not slept on → noop',
    facts: facts({ pending_wake_hint: true }),
    expected: decision('noop', 'pending_wake_hint', idle),
  },
  {
    rule: 'ref§6.4 nothing pending → sleep',
    facts: facts({ tasks: [task('t1', 'failed'), task('t2', 'cancelled'), task('t3', 'interrupted')] }),
    expected: decision('sleep', 'no_pending_scheduler_facts', idle),
  },
];

describe('idleBoundaryDecision', () => {
  it.each(named(idleRows))('%s', (_rule, { facts: given, expected }) => {
    expectDecision(idleBoundaryDecision(given), expected);
  });

  it.each(named(idleRows))('seed000 a sleep decision always agrees with canSleep: %s', (_rule, { facts: given }) => {
    if (idleBoundaryDecision(given).kind === 'sleep') expect(canSleep(given)).toBe(true);
    else if (given.status !== 'asleep') expect(canSleep(given)).toBe(false);
  });
});

function resolution(patch: Partial<ContinuationResolution>): ContinuationResolution {
  return {
    trigger_kind: 'operator_input',
    class: 'local_continuation',
    model_reentry: true,
    prior_closure_outcome: 'completed',
    prior_waiting_reason: null,
    matched_waiting_reason: false,
    evidence: [],
    ...patch,
  };
}

interface MessageRow {
  rule: string;
  facts: SchedulerFacts;
  resolution: ContinuationResolution | null;
  expected: SchedulerDecision;
}

const messageRows: MessageRow[] = [
  {
    rule: 'ref§6.2 rule 1 stopped → stop, even for a model re-entry',
    facts: facts({ status: 'stopped' }),
    resolution: resolution({}),
    expected: decision('stop', 'agent_stopped', { message_id: 'm1', boundary: 'message_processing' }),
  },
  {
    rule: 'ref§6.2 rule 2 model re-entry → start_model_turn',
    facts: facts({ queue: { queued: 2, interrupted: 1 } }),
    resolution: resolution({ class: 'resume_expected_wait', trigger_kind: 'timer_fire' }),
    expected: decision('start_model_turn', 'resume_expected_wait', {
      model_reentry: true,
      message_id: 'm1',
      boundary: 'message_processing',
      evidence: ['trigger_kind=timer_fire', 'queue_len=3', 'turn_in_progress=false'],
    }),
  },
  {
    rule: 'ref§6.2 rule 2 no model re-entry → reduce_message_only (liveness only)',
    facts: facts({ status: 'awake_running', current_run_id: 'run-1' }),
    resolution: resolution({ class: 'liveness_only', model_reentry: false, trigger_kind: 'system_tick' }),
    expected: decision('reduce_message_only', 'liveness_only', {
      message_id: 'm1',
      boundary: 'message_processing',
      evidence: ['trigger_kind=system_tick', 'queue_len=0', 'turn_in_progress=true'],
    }),
  },
  {
    rule: 'ref§5/§6.2 rule 2 a message kind with no continuation trigger → reduce_message_only (liveness only)',
    facts: facts({ queue: { queued: 1, interrupted: 0 } }),
    resolution: null,
    expected: decision('reduce_message_only', 'no_continuation_trigger', {
      message_id: 'm1',
      boundary: 'message_processing',
      evidence: ['queue_len=1', 'turn_in_progress=false'],
    }),
  },
];

describe('decideForMessage', () => {
  it.each(named(messageRows))('%s', (_rule, { facts: given, resolution: resolved, expected }) => {
    expectDecision(decideForMessage(given, resolved, 'm1'), expected);
  });
});

interface SignalRow {
  rule: string;
  facts: SchedulerFacts;
  signal: IdleSignal;
  expected: SchedulerDecision;
}

const tick = { boundary: 'idle_tick' } as const;
const currentRunnable = { current_work_item_id: 'w1', work_items: [item('w1')] };

const signalRows: SignalRow[] = [
  {
    rule: 'ref§6.2 rule 1 stopped → stop for any idle signal',
    facts: facts({ status: 'stopped', current_run_id: 'run-1' }),
    signal: { kind: 'wake_hint', duplicate: false },
    expected: decision('stop', 'agent_stopped', tick),
  },
  {
    rule: 'ref§6.2 rule 3 turn in progress → noop turn_in_progress',
    facts: facts({ status: 'awake_running', current_run_id: 'run-1' }),
    signal: { kind: 'wake_hint', duplicate: false },
    expected: decision('noop', 'turn_in_progress', tick),
  },
  {
    rule: 'ref§6.2 rule 3 wake hint → emit_system_tick wake_hint; wait facts do not block it',
    facts: facts({ ...taskWaiting, waits: [...taskWaiting.waits, wait('external')] }),
    signal: { kind: 'wake_hint', duplicate: false, suppressed: true },
    expected: decision('emit_system_tick', 'wake_hint', { model_reentry: true, ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 duplicate wake hint → noop duplicate_wake_hint',
    facts: facts(),
    signal: { kind: 'wake_hint', duplicate: true },
    expected: decision('noop', 'duplicate_wake_hint', tick),
  },
  {
    rule: 'ref§6.2 rule 3 continue_active held back by a wait decision → the wait',
    facts: facts(taskWaiting),
    signal: { kind: 'continue_active', duplicate: false },
    expected: decision('wait_for_task', 'work_item_waiting_task', { work_item_id: 'w1', task_id: 't9', ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 continue_active right after a model re-entry → noop (suppressed)',
    facts: facts(currentRunnable),
    signal: { kind: 'continue_active', duplicate: true, suppressed: true },
    expected: decision('noop', 'continue_active_suppressed_after_model_reentry_continuation', tick),
  },
  {
    rule: 'ref§6.2 rule 3 duplicate continue_active → noop duplicate_continue_active',
    facts: facts(currentRunnable),
    signal: { kind: 'continue_active', duplicate: true, suppressed: false },
    expected: decision('noop', 'duplicate_continue_active', tick),
  },
  {
    rule: 'ref§6.2 rule 3 continue_active → emit_system_tick for the current item',
    facts: facts(currentRunnable),
    signal: { kind: 'continue_active', duplicate: false },
    expected: decision('emit_system_tick', 'continue_active', { model_reentry: true, work_item_id: 'w1', ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 queued_available held back by a wait decision → the wait',
    facts: facts({ active_timers: 1 }),
    signal: { kind: 'queued_available', duplicate: false },
    expected: decision('wait_for_timer', 'active_timers', { evidence: ['active_timers=1'], ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 duplicate queued_available → noop duplicate_queued_available',
    facts: facts({ work_items: [item('w1')] }),
    signal: { kind: 'queued_available', duplicate: true },
    expected: decision('noop', 'duplicate_queued_available', tick),
  },
  {
    rule: 'ref§6.2 rule 3 queued_available → emit_system_tick; suppression applies to continue_active only',
    facts: facts({ work_items: [item('w1')] }),
    signal: { kind: 'queued_available', duplicate: false, suppressed: true },
    expected: decision('emit_system_tick', 'queued_available', { model_reentry: true, work_item_id: 'w1', ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 a work tick without a runnable item still emits, unbound',
    facts: facts(),
    signal: { kind: 'continue_active', duplicate: false },
    expected: decision('emit_system_tick', 'continue_active', { model_reentry: true, ...tick }),
  },
  {
    rule: 'ref§6.2 rule 3 a wake hint tick is never bound to a work item',
    facts: facts(currentRunnable),
    signal: { kind: 'wake_hint', duplicate: false },
    expected: decision('emit_system_tick', 'wake_hint', { model_reentry: true, ...tick }),
  },
];

describe('decideIdleSignal', () => {
  it.each(named(signalRows))('%s', (_rule, { facts: given, signal, expected }) => {
    expectDecision(decideIdleSignal(given, signal), expected);
  });
});

interface PredicateRow {
  rule: string;
  facts: SchedulerFacts;
  expected: boolean;
}

const sleepRows: PredicateRow[] = [
  { rule: 'seed000 sleep: nothing pending → can sleep', facts: facts(), expected: true },
  { rule: 'seed000 sleep: an asleep agent with nothing pending may stay asleep', facts: facts({ status: 'asleep' }), expected: true },
  { rule: 'seed000 sleep: stopped → cannot sleep', facts: facts({ status: 'stopped' }), expected: false },
  { rule: 'seed000 sleep: a running turn → cannot sleep', facts: facts({ current_run_id: 'run-1' }), expected: false },
  { rule: 'seed000 sleep: queued input → cannot sleep', facts: facts({ queue: { queued: 1, interrupted: 0 } }), expected: false },
  {
    rule: 'seed000 sleep: interrupted entries awaiting replay → cannot sleep',
    facts: facts({ queue: { queued: 0, interrupted: 1 } }),
    expected: false,
  },
  { rule: 'seed000 sleep: runnable work → cannot sleep', facts: facts({ work_items: [item('w1')] }), expected: false },
  { rule: 'seed000 sleep: a queued task → cannot sleep', facts: facts({ tasks: [task('t1', 'queued')] }), expected: false },
  { rule: 'seed000 sleep: a running task → cannot sleep', facts: facts({ tasks: [task('t1', 'running')] }), expected: false },
  { rule: 'seed000 sleep: a cancelling task → cannot sleep', facts: facts({ tasks: [task('t1', 'cancelling')] }), expected: false },
  {
    rule: 'seed000 sleep: terminal tasks only → can sleep',
    facts: facts({ tasks: [task('t1', 'completed'), task('t2', 'failed'), task('t3', 'cancelled'), task('t4', 'interrupted')] }),
    expected: true,
  },
  { rule: 'seed003 sleep: a pending wake hint → cannot sleep', facts: facts({ pending_wake_hint: true }), expected: false },
  {
    rule: 'seed000 sleep: waits and timers alone → can sleep (sleep keeps wake conditions)',
    facts: facts({ ...taskWaiting, waits: [...taskWaiting.waits, wait('external')], active_timers: 2 }),
    expected: true,
  },
];

describe('canSleep', () => {
  it.each(named(sleepRows))('%s', (_rule, { facts: given, expected }) => {
    expect(canSleep(given)).toBe(expected);
  });
});

describe('named predicates', () => {
  it.each(named([
    { rule: 'ref§4.1 row 3 queued entries are queued input', facts: facts({ queue: { queued: 1, interrupted: 0 } }), expected: true },
    { rule: 'ref§4.1 row 3 interrupted entries are queued input', facts: facts({ queue: { queued: 0, interrupted: 1 } }), expected: true },
    { rule: 'ref§4.1 row 3 an empty queue is no queued input', facts: facts(), expected: false },
  ]))('hasQueuedInput: %s', (_rule, { facts: given, expected }) => {
    expect(hasQueuedInput(given)).toBe(expected);
  });

  it.each(named([
    { rule: 'ref§4.2 a runnable item is runnable work', facts: facts({ work_items: [item('w1')] }), expected: true },
    { rule: 'ref§4.2 a blocked item is not runnable work', facts: facts({ work_items: [item('w1', { blocked_by: 'x' })] }), expected: false },
  ]))('hasRunnableWork: %s', (_rule, { facts: given, expected }) => {
    expect(hasRunnableWork(given)).toBe(expected);
  });

  it.each(named([
    { rule: 'seed004 a cancelling task is active', facts: facts({ tasks: [task('t1', 'cancelling')] }), expected: true },
    { rule: 'seed004 terminal tasks are not active', facts: facts({ tasks: [task('t1', 'completed'), task('t2', 'interrupted')] }), expected: false },
  ]))('hasActiveTasks: %s', (_rule, { facts: given, expected }) => {
    expect(hasActiveTasks(given)).toBe(expected);
  });
});
