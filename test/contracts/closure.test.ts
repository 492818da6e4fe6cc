import { describe, expect, it } from 'vitest';
import { ClosureDecision } from '../../src/domain/index.js';
import type { SchedulerFacts } from '../../src/domain/index.js';
import { deriveClosure } from '../../machines/contracts/index.js';
import { T1, T2, facts, item, named, task, wait } from './fixtures.js';

interface Row {
  rule: string;
  facts: SchedulerFacts;
  expected: ClosureDecision;
}

function closure(
  outcome: ClosureDecision['outcome'],
  waiting_reason: ClosureDecision['waiting_reason'],
  evidence: string[],
  patch: Partial<ClosureDecision> = {},
): ClosureDecision {
  return { outcome, waiting_reason, work_signal: null, runtime_posture: 'awake', evidence, ...patch };
}

/** A runnable queued item plus every kind of waiting fact: rows 6–9 must all lose to it. */
const everyWait = {
  current_work_item_id: 'w9',
  work_items: [item('w1', {}, T1), item('w9', { plan_status: 'needs_input' }, T2)],
  waits: [wait('external'), wait('task', { work_item_id: 'w9' })],
  active_timers: 1,
};

const rows: Row[] = [
  {
    rule: 'ref§4.3 row 1 runtime error → failed, over a running turn, waits, timers and tasks',
    facts: facts({
      ...everyWait,
      status: 'asleep',
      runtime_error: true,
      current_run_id: 'run-1',
      tasks: [task('t1', 'running')],
    }),
    expected: closure('failed', null, ['runtime_error', 'active_tasks=1', 'runtime_sleeping'], {
      runtime_posture: 'sleeping',
    }),
  },
  {
    rule: 'ref§4.3 row 2 turn in progress → waiting awaiting_external_change',
    facts: facts({ ...everyWait, status: 'awake_running', current_run_id: 'run-1', turn_index: 3 }),
    expected: closure('waiting', 'awaiting_external_change', ['turn_in_progress']),
  },
  {
    rule: 'ref§4.3 row 3 latest turn failed → failed, over runnable work',
    facts: facts({ ...everyWait, turn_index: 2, last_turn_terminal: 'failed' }),
    expected: closure('failed', null, ['turn_terminal_failed']),
  },
  {
    rule: 'ref§4.3 row 3 latest turn aborted → failed',
    facts: facts({ turn_index: 2, last_turn_terminal: 'aborted' }),
    expected: closure('failed', null, ['turn_terminal_aborted']),
  },
  {
    rule: 'ref§4.3 row 4 turn started without a terminal record → waiting awaiting_external_change',
    facts: facts({ ...everyWait, turn_index: 1, last_turn_terminal: null }),
    expected: closure('waiting', 'awaiting_external_change', ['turn_terminal_missing']),
  },
  {
    rule: 'ref§4.3 row 4 boundary: no turn started yet (turn_index 0) is not a missing terminal',
    facts: facts({ turn_index: 0, last_turn_terminal: null }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
  {
    rule: 'ref§4.3 row 5 current runnable item → continuable with a continue_active work signal',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1')], turn_index: 1, last_turn_terminal: 'completed' }),
    expected: closure('continuable', null, ['runnable_work_present'], {
      work_signal: { work_item_id: 'w1', state: 'open', reactivation_mode: 'continue_active' },
    }),
  },
  {
    rule: 'ref§4.3 row 5 runnable work beats every wait (current needs_input, agent wait, timer, item wait)',
    facts: facts(everyWait),
    expected: closure('continuable', null, ['runnable_work_present'], {
      work_signal: { work_item_id: 'w1', state: 'open', reactivation_mode: 'activate_queued' },
    }),
  },
  {
    rule: 'ref§4.3 row 6 current item waiting_operator → awaiting_operator_input, over agent waits and timers',
    facts: facts({
      current_work_item_id: 'w1',
      work_items: [item('w1', { plan_status: 'needs_input' })],
      waits: [wait('external')],
      active_timers: 1,
    }),
    expected: closure('waiting', 'awaiting_operator_input', ['current_work_item_waiting_operator']),
  },
  {
    rule: 'ref§4.3 row 6 a current item with an operator wait counts too',
    facts: facts({
      current_work_item_id: 'w1',
      work_items: [item('w1')],
      waits: [wait('operator', { work_item_id: 'w1' }), wait('external')],
    }),
    expected: closure('waiting', 'awaiting_operator_input', ['current_work_item_waiting_operator']),
  },
  {
    rule: 'ref§4.3 row 6 a queued (non-current) needs_input item does not make closure waiting',
    facts: facts({ work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
  {
    rule: 'ref§4.3 row 7 agent-level wait → awaiting_external_change, over timers and waiting items',
    facts: facts({
      work_items: [item('w1')],
      waits: [wait('external'), wait('task', { work_item_id: 'w1' })],
      active_timers: 1,
    }),
    expected: closure('waiting', 'awaiting_external_change', ['active_agent_waiting_intents=1']),
  },
  {
    rule: 'ref§4.3 row 7 agent-level operator, timer and system waits read as external change',
    facts: facts({ waits: [wait('operator'), wait('timer', { status: 'triggered' }), wait('system')] }),
    expected: closure('waiting', 'awaiting_external_change', ['active_agent_waiting_intents=3']),
  },
  {
    rule: 'seed000 closure: an agent-level task wait represents its task → awaiting_task_result, over other agent waits',
    facts: facts({
      waits: [wait('external'), wait('task', { subject_ref: 't1', status: 'triggered' })],
      tasks: [task('t1', 'running')],
      active_timers: 1,
    }),
    expected: closure('waiting', 'awaiting_task_result', ['active_agent_task_wait=1', 'active_tasks=1']),
  },
  {
    rule: 'seed000 closure: a resolved agent-level task wait no longer represents the task',
    facts: facts({ waits: [wait('task', { subject_ref: 't1', status: 'resolved' })], tasks: [task('t1', 'running')] }),
    expected: closure('completed', null, ['no_waiting_condition', 'active_tasks=1']),
  },
  {
    rule: 'ref§4.3 row 7 resolved, cancelled and expired agent-level waits do not count',
    facts: facts({
      waits: [wait('external', { status: 'resolved' }), wait('operator', { status: 'cancelled' }), wait('timer', { status: 'expired' })],
    }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
  {
    rule: 'ref§4.3 row 8 active timers → awaiting_timer, over a waiting work item',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1' })], active_timers: 2 }),
    expected: closure('waiting', 'awaiting_timer', ['active_timers=2']),
  },
  {
    rule: 'ref§4.3 row 9 waiting work item: task → awaiting_task_result',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: closure('waiting', 'awaiting_task_result', ['waiting_work_item=w1:waiting_task']),
  },
  {
    rule: 'ref§4.3 row 9 waiting work item: external → awaiting_external_change',
    facts: facts({ work_items: [item('w1')], waits: [wait('external', { work_item_id: 'w1' })] }),
    expected: closure('waiting', 'awaiting_external_change', ['waiting_work_item=w1:waiting_external']),
  },
  {
    rule: 'ref§4.3 row 9 waiting work item: timer → awaiting_timer',
    facts: facts({ work_items: [item('w1')], waits: [wait('timer', { work_item_id: 'w1' })] }),
    expected: closure('waiting', 'awaiting_timer', ['waiting_work_item=w1:waiting_timer']),
  },
  {
    rule: 'ref§4.3 row 9 waiting work item: operator (non-current item with an operator wait) → awaiting_operator_input',
    facts: facts({ work_items: [item('w1')], waits: [wait('operator', { work_item_id: 'w1' })] }),
    expected: closure('waiting', 'awaiting_operator_input', ['waiting_work_item=w1:waiting_operator']),
  },
  {
    rule: 'ref§4.3 row 9 waiting work item: system → awaiting_external_change',
    facts: facts({ work_items: [item('w1')], waits: [wait('system', { work_item_id: 'w1' })] }),
    expected: closure('waiting', 'awaiting_external_change', ['waiting_work_item=w1:waiting_system']),
  },
  {
    rule: 'ref§4.3 row 9 the current waiting item is the reason, over a more recently updated one',
    facts: facts({
      current_work_item_id: 'w1',
      work_items: [item('w1', {}, T1), item('w2', {}, T2)],
      waits: [wait('task', { work_item_id: 'w1' }), wait('timer', { work_item_id: 'w2' })],
    }),
    expected: closure('waiting', 'awaiting_task_result', ['waiting_work_item=w1:waiting_task']),
  },
  {
    rule: 'ref§4.3 row 10 nothing pending → completed (no_waiting_condition)',
    facts: facts({ turn_index: 4, last_turn_terminal: 'completed' }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
  {
    rule: 'ref§4.3 row 10 a manual blocker alone is not a waiting condition',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1', { blocked_by: 'x' })] }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
  {
    rule: 'seed000 closure: active tasks alone never cause waiting (they are evidence only)',
    facts: facts({ tasks: [task('t1', 'running'), task('t2', 'cancelling', 'w1'), task('t3', 'queued'), task('t4', 'completed')] }),
    expected: closure('completed', null, ['no_waiting_condition', 'active_tasks=3']),
  },
  {
    rule: 'seed000 closure: runtime_posture is sleeping iff the agent is asleep',
    facts: facts({ status: 'asleep', active_timers: 1 }),
    expected: closure('waiting', 'awaiting_timer', ['active_timers=1', 'runtime_sleeping'], { runtime_posture: 'sleeping' }),
  },
  {
    rule: 'seed000 closure: a stopped agent is awake for closure purposes',
    facts: facts({ status: 'stopped' }),
    expected: closure('completed', null, ['no_waiting_condition']),
  },
];

describe('deriveClosure', () => {
  it.each(named(rows))('%s', (_rule, { facts: given, expected }) => {
    const result = deriveClosure(given);
    expect(result).toStrictEqual(expected);
    expect(ClosureDecision.safeParse(result).success).toBe(true);
  });

  it.each(named(rows))('seed000 invariant waiting_reason iff waiting, work_signal iff continuable: %s', (_rule, { facts: given }) => {
    const result = deriveClosure(given);
    expect(result.waiting_reason !== null).toBe(result.outcome === 'waiting');
    expect(result.work_signal !== null).toBe(result.outcome === 'continuable');
  });
});
