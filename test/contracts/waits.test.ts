import { describe, expect, it } from 'vitest';
import type { MessageOrigin, WaitConditionKind } from '../../src/domain/index.js';
import { strandedReason, waitMatchesMessage, type MatchedMessage, type MatchedWait, type StrandedReason, type WaitSubject } from '../../machines/contracts/index.js';
import { named } from './fixtures.js';

interface Row {
  rule: string;
  wait: MatchedWait;
  message: MatchedMessage;
  expected: boolean;
}

const on = (kind: WaitConditionKind, subject_ref: string | null = null): MatchedWait => ({ kind, subject_ref });

function message(kind: MatchedMessage['kind'], origin: MessageOrigin, patch: Partial<MatchedMessage> = {}): MatchedMessage {
  return { kind, origin, task_id: null, metadata: {}, ...patch };
}

const taskResult = (taskId: string) => message('task_result', { kind: 'task', task_id: taskId }, { task_id: taskId });
const prompt = message('operator_prompt', { kind: 'operator' });
const timerTick = (timerId: string) => message('timer_tick', { kind: 'timer', timer_id: timerId });
const webhook = message('webhook_event', { kind: 'webhook', source: 'http' });
const channel = message('channel_event', { kind: 'channel', channel_id: 'http' });
const callback = (triggerId: string) => message('callback_event', { kind: 'callback', descriptor_id: triggerId, source: 'capability_url' });
const wakeTick = (triggerId: string | null) =>
  message('system_tick', { kind: 'system', subsystem: 'wake_hint' }, { metadata: { wake_hint: { reason: 'r', source: triggerId ? 'callback' : 'control', external_trigger_id: triggerId } } });
const workQueueTick = message('system_tick', { kind: 'system', subsystem: 'work_queue' }, { metadata: { work_queue: { reason: 'queued_available' } } });
const followup = message('internal_followup', { kind: 'system', subsystem: 'tool_enqueue' });

const rows: Row[] = [
  { rule: 'ref§6.8 task_result ↔ TaskResult{task_id}: its own task', wait: on('task', 'task_a'), message: taskResult('task_a'), expected: true },
  { rule: "ref§6.8 task_result ↔ TaskResult{task_id}: another task's result does not", wait: on('task', 'task_a'), message: taskResult('task_b'), expected: false },
  { rule: 'ref§6.8 a task wait naming no task takes any task result', wait: on('task'), message: taskResult('task_b'), expected: true },
  { rule: 'ref§6.8 a task wait is not satisfied by an operator prompt', wait: on('task', 'task_a'), message: prompt, expected: false },
  { rule: 'ref§6.8 operator_prompt ↔ OperatorInput', wait: on('operator'), message: prompt, expected: true },
  { rule: 'ref§6.8 an operator wait is not satisfied by an external event', wait: on('operator'), message: webhook, expected: false },
  { rule: 'ref§6.8 timer_tick ↔ Timer with subject_ref == timer_id', wait: on('timer', 'tmr_a'), message: timerTick('tmr_a'), expected: true },
  { rule: "ref§6.8 timer_tick ↔ Timer: another timer's tick does not", wait: on('timer', 'tmr_a'), message: timerTick('tmr_b'), expected: false },
  { rule: 'ref§6.8 timer_tick ↔ Timer with subject_ref absent: any timer', wait: on('timer'), message: timerTick('tmr_b'), expected: true },
  { rule: 'ref§6.8 a timer wait is not satisfied by a system tick', wait: on('timer'), message: wakeTick(null), expected: false },
  { rule: 'ref§6.8 external events ↔ ExternalIngress without id: a webhook event', wait: on('external'), message: webhook, expected: true },
  { rule: 'ref§6.8 external events ↔ ExternalIngress without id: a channel event', wait: on('external'), message: channel, expected: true },
  { rule: 'ref§6.8 external events ↔ ExternalIngress without id: a callback event', wait: on('external'), message: callback('trg_a'), expected: true },
  { rule: 'ref§6.8 external events ↔ ExternalIngress{id}: the callback of that trigger', wait: on('external', 'trg_a'), message: callback('trg_a'), expected: true },
  { rule: "ref§6.8 external events ↔ ExternalIngress{id}: another trigger's callback does not", wait: on('external', 'trg_a'), message: callback('trg_b'), expected: false },
  { rule: 'ref§6.8 external events ↔ ExternalIngress{id}: a webhook through no trigger does not', wait: on('external', 'trg_a'), message: webhook, expected: false },
  { rule: 'ref§6.8 system_tick with external_trigger_id ↔ ExternalIngress', wait: on('external'), message: wakeTick('trg_a'), expected: true },
  { rule: 'ref§6.8 system_tick with external_trigger_id ↔ ExternalIngress{id} of that trigger', wait: on('external', 'trg_a'), message: wakeTick('trg_a'), expected: true },
  { rule: 'ref§6.8 system_tick with another external_trigger_id does not satisfy ExternalIngress{id}', wait: on('external', 'trg_a'), message: wakeTick('trg_b'), expected: false },
  { rule: 'ref§6.8 a system tick without external_trigger_id is not external ingress', wait: on('external'), message: wakeTick(null), expected: false },
  { rule: 'ref§6.8 system_tick(work_queue) → never: not an external wait', wait: on('external'), message: workQueueTick, expected: false },
  { rule: 'ref§6.8 other system_tick ↔ SystemTick', wait: on('system'), message: wakeTick(null), expected: true },
  { rule: 'ref§6.8 system_tick(work_queue) → never: not a system wait', wait: on('system'), message: workQueueTick, expected: false },
  { rule: 'ref§6.8 a system tick through a capability is external ingress, not a system tick', wait: on('system'), message: wakeTick('trg_a'), expected: false },
  { rule: 'ref§6.8 an internal follow-up satisfies no wait: system', wait: on('system'), message: followup, expected: false },
  { rule: 'ref§6.8 an internal follow-up satisfies no wait: external', wait: on('external'), message: followup, expected: false },
];

describe('waitMatchesMessage', () => {
  it.each(named(rows))('%s', (_rule, { wait, message: msg, expected }) => {
    expect(waitMatchesMessage(wait, msg)).toBe(expected);
  });
});

interface StrandedRow {
  rule: string;
  wait: MatchedWait;
  subject: WaitSubject;
  expected: StrandedReason | null;
}

const subject = (patch: Partial<WaitSubject> = {}): WaitSubject => ({ found: true, ended: false, delivery_pending: false, ...patch });

const strandedRows: StrandedRow[] = [
  { rule: 'seed003 a task wait on a running task can still end', wait: on('task', 'task_a'), subject: subject(), expected: null },
  { rule: 'seed003 a task wait whose task ended with its result queued ends when the result is claimed', wait: on('task', 'task_a'), subject: subject({ ended: true, delivery_pending: true }), expected: null },
  { rule: 'seed003 a task wait whose task ended with no result on the way can never end', wait: on('task', 'task_a'), subject: subject({ ended: true }), expected: 'task_ended' },
  { rule: 'seed003 a task wait on a task that does not exist can never end', wait: on('task', 'task_a'), subject: subject({ found: false }), expected: 'subject_missing' },
  { rule: 'seed003 a task wait naming no task waits for any task: never stranded', wait: on('task'), subject: subject({ found: false }), expected: null },
  { rule: 'seed003 a timer wait on an active timer can still end', wait: on('timer', 'tmr_a'), subject: subject(), expected: null },
  { rule: 'seed003 a timer wait whose timer fired with its tick queued ends when the tick is claimed', wait: on('timer', 'tmr_a'), subject: subject({ ended: true, delivery_pending: true }), expected: null },
  { rule: 'seed003 a timer wait whose timer was cancelled, no tick on the way, can never end', wait: on('timer', 'tmr_a'), subject: subject({ ended: true }), expected: 'timer_ended' },
  { rule: 'seed003 a timer wait on a timer that does not exist can never end', wait: on('timer', 'tmr_a'), subject: subject({ found: false }), expected: 'subject_missing' },
  { rule: 'seed003 an operator wait can always end (a prompt)', wait: on('operator'), subject: subject({ found: false }), expected: null },
  { rule: 'seed003 an external wait can always end (an enqueue, a callback)', wait: on('external', 'trg_a'), subject: subject({ found: false, ended: true }), expected: null },
  { rule: 'seed003 a system wait can always end (a wake hint)', wait: on('system'), subject: subject({ ended: true }), expected: null },
];

describe('strandedReason', () => {
  it.each(named(strandedRows))('%s', (_rule, { wait, subject: s, expected }) => {
    expect(strandedReason(wait, s)).toBe(expected);
  });
});
