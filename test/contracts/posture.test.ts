import { describe, expect, it } from 'vitest';
import { PostureProjection } from '../../src/domain/index.js';
import type { SchedulerFacts } from '../../src/domain/index.js';
import { derivePosture } from '../../machines/contracts/index.js';
import { T1, T2, T3, facts, item, named, task, wait } from './fixtures.js';

interface Row {
  rule: string;
  facts: SchedulerFacts;
  expected: PostureProjection;
}

/** Everything at once: each precedence row removes the facts of the rows above it. */
const busy = {
  queue: { queued: 1, interrupted: 1 },
  work_items: [item('w1'), item('w2', { plan_status: 'needs_input' })],
  waits: [wait('task', { work_item_id: 'w2' })],
};

const rows: Row[] = [
  {
    rule: 'seed000 posture#1 stopped wins over an active run, queued input and runnable work',
    facts: facts({ ...busy, status: 'stopped', current_run_id: 'run-1' }),
    expected: { posture: 'stopped', reason: 'agent_stopped' },
  },
  {
    rule: 'seed000 posture#2 current_run_id set → active_turn (with run_id), over queued input',
    facts: facts({ ...busy, status: 'awake_running', current_run_id: 'run-1', current_work_item_id: 'w1' }),
    expected: { posture: 'active_turn', reason: 'active_turn', run_id: 'run-1' },
  },
  {
    rule: 'seed000 posture#3 queued entries → has_queued_input, over runnable work',
    facts: facts({ ...busy, queue: { queued: 1, interrupted: 0 } }),
    expected: { posture: 'has_queued_input', reason: 'queued_input' },
  },
  {
    rule: 'seed000 posture#3 interrupted entries awaiting replay → has_queued_input',
    facts: facts({ ...busy, queue: { queued: 0, interrupted: 1 } }),
    expected: { posture: 'has_queued_input', reason: 'queued_input' },
  },
  {
    rule: 'seed000 posture#4 current runnable item → has_runnable_work',
    facts: facts({ current_work_item_id: 'w2', work_items: [item('w1', {}, T1), item('w2', {}, T2)] }),
    expected: { posture: 'has_runnable_work', reason: 'current_runnable', work_item_id: 'w2' },
  },
  {
    rule: 'seed000 posture#4 queued runnable item (oldest first) → has_runnable_work',
    facts: facts({ work_items: [item('w2', {}, T2), item('w1', {}, T1)] }),
    expected: { posture: 'has_runnable_work', reason: 'queued_runnable', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#5 work item with an active task wait → waiting_for_task (task_id = subject_ref)',
    facts: facts({
      work_items: [item('w1')],
      waits: [wait('task', { work_item_id: 'w1', subject_ref: 'task-7' })],
    }),
    expected: { posture: 'waiting_for_task', reason: 'active_task_wait', work_item_id: 'w1', task_id: 'task-7' },
  },
  {
    rule: 'seed000 posture#5 task_id comes from the task wait, not from other waits of the item',
    facts: facts({
      work_items: [item('w1')],
      waits: [
        wait('operator', { work_item_id: 'w1', subject_ref: 'question-1' }),
        wait('task', { work_item_id: 'w1', subject_ref: 'task-7' }),
      ],
    }),
    expected: { posture: 'waiting_for_task', reason: 'active_task_wait', work_item_id: 'w1', task_id: 'task-7' },
  },
  {
    rule: 'seed000 posture#5 a task wait without a subject gives no task_id',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1' })] }),
    expected: { posture: 'waiting_for_task', reason: 'active_task_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#6 work item with an active external wait → waiting_for_external',
    facts: facts({
      work_items: [item('w1')],
      waits: [wait('external', { work_item_id: 'w1', subject_ref: 'pr-12' })],
    }),
    expected: { posture: 'waiting_for_external', reason: 'active_external_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#7 work item with plan_status needs_input → waiting_for_operator',
    facts: facts({ work_items: [item('w1', { plan_status: 'needs_input' })] }),
    expected: { posture: 'waiting_for_operator', reason: 'plan_needs_input', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#7 work item with an active operator wait → waiting_for_operator',
    facts: facts({ work_items: [item('w1')], waits: [wait('operator', { work_item_id: 'w1' })] }),
    expected: { posture: 'waiting_for_operator', reason: 'active_operator_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#8 work item with blocked_by → blocked (manual_blocker)',
    facts: facts({ work_items: [item('w1', { blocked_by: 'waiting for review' })] }),
    expected: { posture: 'blocked', reason: 'manual_blocker', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#8 work-item timer wait projects as blocked',
    facts: facts({ work_items: [item('w1')], waits: [wait('timer', { work_item_id: 'w1' })] }),
    expected: { posture: 'blocked', reason: 'active_timer_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#8 work-item system wait projects as blocked',
    facts: facts({ work_items: [item('w1')], waits: [wait('system', { work_item_id: 'w1' })] }),
    expected: { posture: 'blocked', reason: 'active_system_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 posture#9 nothing pending → idle',
    facts: facts(),
    expected: { posture: 'idle', reason: 'no_pending_scheduler_facts' },
  },
  {
    rule: 'seed000 precedence: runnable work beats every wait',
    facts: facts({
      work_items: [item('w1', {}, T1), item('w2', {}, T2), item('w3', { plan_status: 'needs_input' }, T3)],
      waits: [wait('task', { work_item_id: 'w2' }), wait('external', { work_item_id: 'w3' })],
    }),
    expected: { posture: 'has_runnable_work', reason: 'queued_runnable', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 precedence: task wait outranks a more recent external wait',
    facts: facts({
      work_items: [item('w1', {}, T1), item('w2', {}, T2)],
      waits: [wait('task', { work_item_id: 'w1' }), wait('external', { work_item_id: 'w2' })],
    }),
    expected: { posture: 'waiting_for_task', reason: 'active_task_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 precedence: external wait outranks a more recent operator wait',
    facts: facts({
      work_items: [item('w1', {}, T1), item('w2', { plan_status: 'needs_input' }, T2)],
      waits: [wait('external', { work_item_id: 'w1' })],
    }),
    expected: { posture: 'waiting_for_external', reason: 'active_external_wait', work_item_id: 'w1' },
  },
  {
    rule: 'seed000 precedence: operator wait outranks a more recent blocker',
    facts: facts({
      work_items: [item('w1', { plan_status: 'needs_input' }, T1), item('w2', { blocked_by: 'x' }, T2)],
    }),
    expected: { posture: 'waiting_for_operator', reason: 'plan_needs_input', work_item_id: 'w1' },
  },
  {
    rule: 'ref§4.1 within one posture the most recently updated item is reported',
    facts: facts({
      work_items: [item('w1', { blocked_by: 'x' }, T1), item('w2', {}, T3), item('w3', { blocked_by: 'y' }, T2)],
      waits: [wait('timer', { work_item_id: 'w2' })],
    }),
    expected: { posture: 'blocked', reason: 'active_timer_wait', work_item_id: 'w2' },
  },
  {
    rule: 'seed000 asleep agent with queued input is has_queued_input, not idle',
    facts: facts({ status: 'asleep', queue: { queued: 2, interrupted: 0 } }),
    expected: { posture: 'has_queued_input', reason: 'queued_input' },
  },
  {
    rule: 'seed000 asleep agent with runnable work is has_runnable_work, not idle',
    facts: facts({ status: 'asleep', work_items: [item('w1')] }),
    expected: { posture: 'has_runnable_work', reason: 'queued_runnable', work_item_id: 'w1' },
  },
  {
    rule: 'ref§4.1 agent-level waits and timers do not influence posture',
    facts: facts({ waits: [wait('external'), wait('operator')], active_timers: 2 }),
    expected: { posture: 'idle', reason: 'no_pending_scheduler_facts' },
  },
  {
    rule: 'ref§1 active tasks alone are not a wait: idle',
    facts: facts({ tasks: [task('t1', 'running'), task('t2', 'queued', 'w1')] }),
    expected: { posture: 'idle', reason: 'no_pending_scheduler_facts' },
  },
  {
    rule: 'ref§4.2 completed items are ignored: idle',
    facts: facts({
      work_items: [item('w1', { state: 'completed', plan_status: 'needs_input', blocked_by: 'x' })],
      waits: [wait('task', { work_item_id: 'w1' })],
    }),
    expected: { posture: 'idle', reason: 'no_pending_scheduler_facts' },
  },
  {
    rule: 'ref§7.1 a triggered wait still holds the item: waiting_for_task',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1', status: 'triggered' })] }),
    expected: { posture: 'waiting_for_task', reason: 'active_task_wait', work_item_id: 'w1' },
  },
  {
    rule: 'ref§7.1 a resolved wait frees the item: has_runnable_work',
    facts: facts({ work_items: [item('w1')], waits: [wait('task', { work_item_id: 'w1', status: 'resolved' })] }),
    expected: { posture: 'has_runnable_work', reason: 'queued_runnable', work_item_id: 'w1' },
  },
];

describe('derivePosture', () => {
  it.each(named(rows))('%s', (_rule, { facts: given, expected }) => {
    const result = derivePosture(given);
    expect(result).toStrictEqual(expected);
    expect(PostureProjection.safeParse(result).success).toBe(true);
  });
});
