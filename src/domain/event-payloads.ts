import { z } from 'zod';
import { EffectRecord } from './effect.js';
import { EventType } from './event.js';
import { MessageKind, Priority } from './message.js';
import { ClosureDecision, ContinuationResolution, SchedulerDecision, WakeDisposition } from './scheduling.js';
import { TaskKind, TaskStatus } from './task.js';
import { TimerRecord } from './timer.js';
import { TransitionRecord } from './transition.js';
import { DeliveryMode } from './trigger.js';
import { WaitConditionRecord } from './wait.js';

/**
 * The payload of each event type, as the runtime emits it (`Tx.emit` is typed by this map, so an
 * emit that does not fit fails the typecheck). Payloads are open objects: the fields named here
 * are always there (or optional where some emits leave them out); others may follow. A record
 * copied whole into its event (a transition, wait, timer, effect, decision) keeps its id fields
 * required and the rest optional, so events written by an earlier version still read.
 */
const text = z.string();
const id = z.string();

export const EVENT_PAYLOADS = {
  agent_created: z.looseObject({ agent_id: id, mission: text }),
  transition_committed: TransitionRecord.partial()
    .required({ transition_id: true, from_state: true, to_state: true })
    // The machine event that caused it, as sent (scheduler facts included): `holon-xstate replay` feeds it again.
    .extend({ machine_event: z.looseObject({ type: z.string() }).optional() })
    .loose(),
  transition_phase: z.looseObject({ transition_id: id.nullable(), phase: text, detail: z.unknown().optional() }),
  message_queued: z.looseObject({
    kind: MessageKind,
    message_id: id.optional(),
    priority: Priority.optional(),
    reason: text.optional(),
    work_item_id: id.nullish(),
    task_id: id.optional(),
    timer_id: id.optional(),
  }),
  scheduler_decision: SchedulerDecision.partial().required({ kind: true, reason: true }).loose(),
  // `message_id` is the turn's head (the first message it took); `message_ids` every message it took
  // at its start, in order (events written before turns took several carry only `message_id`).
  turn_started: z.looseObject({ run_id: id, message_id: id, message_ids: z.array(id).optional(), turn_index: z.number().int() }),
  // Messages that joined a running turn at one of its safe points (holon-reference §3).
  turn_interjected: z.looseObject({ run_id: id, message_ids: z.array(id), turn_index: z.number().int() }),
  turn_finished: z.looseObject({
    run_id: id.optional(),
    closure: ClosureDecision.nullish(),
    text: text.optional(),
    terminal: text.optional(),
    reason: text.optional(),
    note: text.optional(),
  }),
  continuation_resolved: ContinuationResolution.partial().extend({ message_id: id }).loose(),
  wake_hint: z.looseObject({
    disposition: WakeDisposition,
    reason: text,
    source: text.nullish(),
    external_trigger_id: id.nullish(),
  }),
  task_status_changed: z.looseObject({
    task_id: id,
    status: TaskStatus,
    kind: TaskKind.optional(),
    summary: text.optional(),
    pid: z.number().int().nullish(),
    exit_code: z.number().int().nullish(),
    reason: text.nullish(),
    child_agent_id: id.optional(),
    force: z.boolean().optional(),
  }),
  task_input: z.looseObject({ task_id: id, bytes: z.number().int().nonnegative() }),
  timer_created: TimerRecord.partial().required({ id: true }).loose(),
  timer_fired: z.looseObject({ timer_id: id, due_at: text, fire_count: z.number().int().nonnegative() }),
  timer_cancelled: z.looseObject({ timer_id: id }),
  wait_created: WaitConditionRecord.partial().required({ id: true }).loose(),
  wait_resolved: z.looseObject({ wait_id: id, reason: text.optional(), message_id: id.optional() }),
  wait_cancelled: z.looseObject({ wait_id: id, reason: text }),
  work_item_created: z.looseObject({ work_item_id: id, objective: text }),
  work_item_updated: z.looseObject({
    work_item_id: id,
    revision: z.number().int().optional(),
    picked: z.boolean().optional(),
    reason: text.nullish(),
  }),
  work_item_completed: z.looseObject({ work_item_id: id }),
  trigger_created: z.looseObject({ trigger_id: id, delivery_mode: DeliveryMode, is_default: z.boolean() }),
  trigger_revoked: z.looseObject({ trigger_id: id, delivery_mode: DeliveryMode }),
  callback_delivered: z.looseObject({ delivery_id: id, external_trigger_id: id, disposition: text }),
  snapshot_taken: z.looseObject({
    snapshot_id: id.optional(),
    kind: text.optional(),
    checksum: text.optional(),
    migrated: z.number().int().optional(),
    skipped_corrupted: z.number().int().optional(),
  }),
  control_applied: z.looseObject({ action: z.enum(['start', 'stop']) }),
  current_run_aborted: z.looseObject({ run_id: id, reason: text.optional() }),
  effect_recorded: EffectRecord.partial().required({ idempotency_key: true, kind: true, status: true }).loose(),
} satisfies Record<EventType, z.ZodType>;

export type EventPayload<T extends EventType> = z.input<(typeof EVENT_PAYLOADS)[T]>;

function typed<T extends EventType>(type: T) {
  return z.object({
    id: z.string(),
    event_seq: z.number().int().positive(),
    ts: z.string(),
    agent_id: z.string(),
    type: z.literal(type),
    payload: EVENT_PAYLOADS[type],
  });
}

/**
 * An event as clients see it: a union discriminated by `type`, each member with its payload's
 * fields, so a typed client reads `payload.task_id` of a `task_status_changed` without a cast.
 * The store keeps and checks the envelope (`AgentEvent`); this is the same JSON.
 */
export const TypedAgentEvent = z.discriminatedUnion('type', [
  typed('agent_created'),
  typed('transition_committed'),
  typed('transition_phase'),
  typed('message_queued'),
  typed('scheduler_decision'),
  typed('turn_started'),
  typed('turn_interjected'),
  typed('turn_finished'),
  typed('continuation_resolved'),
  typed('wake_hint'),
  typed('task_status_changed'),
  typed('task_input'),
  typed('timer_created'),
  typed('timer_fired'),
  typed('timer_cancelled'),
  typed('wait_created'),
  typed('wait_resolved'),
  typed('wait_cancelled'),
  typed('work_item_created'),
  typed('work_item_updated'),
  typed('work_item_completed'),
  typed('trigger_created'),
  typed('trigger_revoked'),
  typed('callback_delivered'),
  typed('snapshot_taken'),
  typed('control_applied'),
  typed('current_run_aborted'),
  typed('effect_recorded'),
]);
export type TypedAgentEvent = z.output<typeof TypedAgentEvent>;

/** Fails the typecheck when an event type has no member in the union. */
type MissingMember = Exclude<EventType, TypedAgentEvent['type']>;
export const everyEventTypeTyped: MissingMember extends never ? true : never = true;
