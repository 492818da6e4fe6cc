import { describe, expect, it } from 'vitest';
import { WorkItemScheduling } from '../../src/domain/index.js';
import type { SchedulerFacts, WorkSignal } from '../../src/domain/index.js';
import { deriveWorkItemScheduling, waitingWorkItem, workSignal } from '../../machines/contracts/index.js';
import type { WaitingWorkItem, WorkItemFact } from '../../machines/contracts/index.js';
import { T1, T2, T3, facts, item, named, wait } from './fixtures.js';

const w1 = item('w1');

interface SchedulingRow {
  rule: string;
  item: WorkItemFact;
  facts: SchedulerFacts;
  expected: WorkItemScheduling;
}

const schedulingRows: SchedulingRow[] = [
  {
    rule: 'ref§4.2 row 1 completed item is completed and never current, even with waits and focus',
    item: item('w1', { state: 'completed', plan_status: 'needs_input', blocked_by: 'x' }),
    facts: facts({ current_work_item_id: 'w1', waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'completed', reason_code: 'completed', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 active task wait → waiting_task',
    item: w1,
    facts: facts({ waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_task', reason_code: 'active_task_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 active operator wait → waiting_operator',
    item: w1,
    facts: facts({ waits: [wait('operator', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_operator', reason_code: 'active_operator_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 active timer wait → waiting_timer',
    item: w1,
    facts: facts({ waits: [wait('timer', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_timer', reason_code: 'active_timer_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 active external wait → waiting_external',
    item: w1,
    facts: facts({ waits: [wait('external', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_external', reason_code: 'active_external_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 active system wait → waiting_system',
    item: w1,
    facts: facts({ waits: [wait('system', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_system', reason_code: 'active_system_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 kind precedence: task beats operator',
    item: w1,
    facts: facts({ waits: [wait('operator', { work_item_id: 'w1' }), wait('task', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_task', reason_code: 'active_task_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 kind precedence: operator beats timer',
    item: w1,
    facts: facts({ waits: [wait('timer', { work_item_id: 'w1' }), wait('operator', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_operator', reason_code: 'active_operator_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 kind precedence: timer beats external',
    item: w1,
    facts: facts({ waits: [wait('external', { work_item_id: 'w1' }), wait('timer', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_timer', reason_code: 'active_timer_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 kind precedence: external beats system',
    item: w1,
    facts: facts({ waits: [wait('system', { work_item_id: 'w1' }), wait('external', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_external', reason_code: 'active_external_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 a triggered wait still counts',
    item: w1,
    facts: facts({ waits: [wait('external', { work_item_id: 'w1', status: 'triggered' })] }),
    expected: { scheduling_state: 'waiting_external', reason_code: 'active_external_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 resolved, cancelled and expired waits do not count',
    item: w1,
    facts: facts({
      waits: [
        wait('task', { work_item_id: 'w1', status: 'resolved' }),
        wait('operator', { work_item_id: 'w1', status: 'cancelled' }),
        wait('timer', { work_item_id: 'w1', status: 'expired' }),
      ],
    }),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: false },
  },
  {
    rule: "ref§4.2 row 4 another item's wait and agent-level waits do not count",
    item: w1,
    facts: facts({ waits: [wait('task', { work_item_id: 'w2' }), wait('external')] }),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: false },
  },
  {
    rule: 'ref§4.2 row 4 before row 5: a wait outranks the manual blocker it set',
    item: item('w1', { blocked_by: 'waiting for CI' }),
    facts: facts({ waits: [wait('external', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_external', reason_code: 'active_external_wait', is_current: false },
  },
  {
    rule: 'ref§4.2 row 5 blocked_by set without a wait → blocked (manual_blocker)',
    item: item('w1', { blocked_by: 'waiting for CI' }),
    facts: facts(),
    expected: { scheduling_state: 'blocked', reason_code: 'manual_blocker', is_current: false },
  },
  {
    rule: 'ref§4.2 row 5 before row 6: a manual blocker outranks needs_input',
    item: item('w1', { blocked_by: 'x', plan_status: 'needs_input' }),
    facts: facts(),
    expected: { scheduling_state: 'blocked', reason_code: 'manual_blocker', is_current: false },
  },
  {
    rule: 'ref§4.2 row 6 plan_status needs_input → waiting_operator (plan_needs_input)',
    item: item('w1', { plan_status: 'needs_input' }),
    facts: facts(),
    expected: { scheduling_state: 'waiting_operator', reason_code: 'plan_needs_input', is_current: false },
  },
  {
    rule: 'ref§4.2 row 7 a ready item is runnable',
    item: w1,
    facts: facts(),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: false },
  },
  {
    rule: 'ref§4.2 row 7 a draft item is runnable too',
    item: item('w1', { plan_status: 'draft' }),
    facts: facts(),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: false },
  },
  {
    rule: 'ref§4.2 is_current: the focused open item is current',
    item: w1,
    facts: facts({ current_work_item_id: 'w1' }),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: true },
  },
  {
    rule: 'ref§4.2 is_current: a focused item that waits is still current',
    item: w1,
    facts: facts({ current_work_item_id: 'w1', waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: { scheduling_state: 'waiting_task', reason_code: 'active_task_wait', is_current: true },
  },
  {
    rule: 'ref§4.2 is_current: focus on another item leaves this one not current',
    item: w1,
    facts: facts({ current_work_item_id: 'w2' }),
    expected: { scheduling_state: 'runnable', reason_code: 'runnable', is_current: false },
  },
];

describe('deriveWorkItemScheduling', () => {
  it.each(named(schedulingRows))('%s', (_rule, { item: subject, facts: given, expected }) => {
    const result = deriveWorkItemScheduling(subject, given);
    expect(result).toStrictEqual(expected);
    expect(WorkItemScheduling.safeParse(result).success).toBe(true);
  });
});

interface SignalRow {
  rule: string;
  facts: SchedulerFacts;
  expected: WorkSignal | null;
}

const signalRows: SignalRow[] = [
  { rule: 'ref§4.2 no work items → no work signal', facts: facts(), expected: null },
  {
    rule: 'ref§4.2 current runnable item → continue_active, even when an older queued item is runnable',
    facts: facts({ current_work_item_id: 'w2', work_items: [item('w1', {}, T1), item('w2', {}, T2)] }),
    expected: { work_item_id: 'w2', state: 'open', reactivation_mode: 'continue_active' },
  },
  {
    rule: 'ref§4.2 no current item → first queued runnable item → activate_queued',
    facts: facts({ work_items: [item('w1', {}, T1)] }),
    expected: { work_item_id: 'w1', state: 'open', reactivation_mode: 'activate_queued' },
  },
  {
    rule: 'ref§4.2 current item waiting → first queued runnable item → activate_queued',
    facts: facts({
      current_work_item_id: 'w1',
      work_items: [item('w1', {}, T1), item('w2', {}, T2)],
      waits: [wait('task', { work_item_id: 'w1' })],
    }),
    expected: { work_item_id: 'w2', state: 'open', reactivation_mode: 'activate_queued' },
  },
  {
    rule: 'ref§4.2 rank 2 queued runnable items are FIFO by created_at ascending',
    facts: facts({ work_items: [item('w3', {}, T3), item('w1', {}, T2), item('w2', {}, T1)] }),
    expected: { work_item_id: 'w2', state: 'open', reactivation_mode: 'activate_queued' },
  },
  {
    rule: 'ref§4.2 rank 2 equal created_at: ties broken by id',
    facts: facts({ work_items: [item('wb', {}, T1), item('wa', {}, T1), item('wc', {}, T1)] }),
    expected: { work_item_id: 'wa', state: 'open', reactivation_mode: 'activate_queued' },
  },
  {
    rule: 'ref§8.5 completed items never signal, even when focused',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1', { state: 'completed' })] }),
    expected: null,
  },
  {
    rule: 'ref§4.2 waiting, blocked and needs_input items never signal',
    facts: facts({
      work_items: [item('w1'), item('w2', { blocked_by: 'x' }), item('w3', { plan_status: 'needs_input' })],
      waits: [wait('timer', { work_item_id: 'w1' })],
    }),
    expected: null,
  },
];

describe('workSignal', () => {
  it.each(named(signalRows))('%s', (_rule, { facts: given, expected }) => {
    expect(workSignal(given)).toStrictEqual(expected);
  });
});

interface WaitingRow {
  rule: string;
  facts: SchedulerFacts;
  expected: WaitingWorkItem | null;
}

const waitingRows: WaitingRow[] = [
  { rule: 'ref§4.2 no items → no waiting work item', facts: facts(), expected: null },
  {
    rule: 'ref§4.2 a non-current needs_input item without waits is not the waiting work item',
    facts: facts({ work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: null,
  },
  {
    rule: 'ref§4.2 the current needs_input item is the waiting work item',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: { item: item('w1', { plan_status: 'needs_input' }), state: 'waiting_operator', is_current: true },
  },
  {
    rule: 'ref§4.2 a manually blocked item with no wait is not waiting',
    facts: facts({ current_work_item_id: 'w1', work_items: [item('w1', { blocked_by: 'x' })] }),
    expected: null,
  },
  {
    rule: 'ref§4.2 among items with waits the most recently updated comes first',
    facts: facts({
      work_items: [item('w1', {}, T1), item('w2', {}, T3), item('w3', {}, T2)],
      waits: [
        wait('task', { work_item_id: 'w1' }),
        wait('timer', { work_item_id: 'w2' }),
        wait('external', { work_item_id: 'w3' }),
      ],
    }),
    expected: { item: item('w2', {}, T3), state: 'waiting_timer', is_current: false },
  },
  {
    rule: 'ref§4.2 equal updated_at: ties broken by id',
    facts: facts({
      work_items: [item('wb', {}, T1), item('wa', {}, T1)],
      waits: [wait('task', { work_item_id: 'wb' }), wait('timer', { work_item_id: 'wa' })],
    }),
    expected: { item: item('wa', {}, T1), state: 'waiting_timer', is_current: false },
  },
  {
    rule: 'ref§4.2 the current waiting item is preferred over a more recently updated one',
    facts: facts({
      current_work_item_id: 'w1',
      work_items: [item('w1', {}, T1), item('w2', {}, T2)],
      waits: [wait('task', { work_item_id: 'w1' }), wait('external', { work_item_id: 'w2' })],
    }),
    expected: { item: item('w1', {}, T1), state: 'waiting_task', is_current: true },
  },
];

describe('waitingWorkItem', () => {
  it.each(named(waitingRows))('%s', (_rule, { facts: given, expected }) => {
    expect(waitingWorkItem(given)).toStrictEqual(expected);
  });
});
