import { z } from 'zod';
import { ContinuationTriggerKind } from './scheduling.js';

export const MessageKind = z.enum([
  'operator_prompt',
  'channel_event',
  'webhook_event',
  'callback_event',
  'timer_tick',
  'system_tick',
  'task_result',
  'task_status',
  'control',
  'internal_followup',
]);
export type MessageKind = z.infer<typeof MessageKind>;

/** Queue lanes, highest first; FIFO within a lane. */
export const Priority = z.enum(['interject', 'next', 'normal', 'background']);
export type Priority = z.infer<typeof Priority>;
export const PRIORITY_ORDER: readonly Priority[] = Priority.options;

export const AuthorityClass = z.enum([
  'operator_instruction',
  'runtime_instruction',
  'integration_signal',
  'external_evidence',
]);
export type AuthorityClass = z.infer<typeof AuthorityClass>;

export const MessageOrigin = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('operator'), actor_id: z.string().optional() }),
  z.object({ kind: z.literal('channel'), channel_id: z.string(), sender_id: z.string().optional() }),
  z.object({ kind: z.literal('webhook'), source: z.string(), event_type: z.string().optional() }),
  z.object({ kind: z.literal('callback'), descriptor_id: z.string(), source: z.string().optional() }),
  z.object({ kind: z.literal('timer'), timer_id: z.string() }),
  z.object({ kind: z.literal('system'), subsystem: z.string() }),
  z.object({ kind: z.literal('task'), task_id: z.string() }),
]);
export type MessageOrigin = z.infer<typeof MessageOrigin>;

export const MessageBody = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('json'), value: z.unknown() }),
]);
export type MessageBody = z.infer<typeof MessageBody>;

/** A body as text: its text, or its JSON value rendered. */
export function textOf(body: MessageBody | null): string {
  if (!body) return '';
  return body.type === 'text' ? body.text : JSON.stringify(body.value);
}

export const QueueEntryStatus = z.enum(['queued', 'dequeued', 'processed', 'interrupted', 'aborted', 'dropped']);
export type QueueEntryStatus = z.infer<typeof QueueEntryStatus>;

/** MessageKind → the continuation trigger it produces (holon-reference §2.6). */
export const TRIGGER_KIND_OF: Readonly<Record<MessageKind, ContinuationTriggerKind | null>> = {
  operator_prompt: 'operator_input',
  channel_event: 'external_event',
  webhook_event: 'external_event',
  callback_event: 'external_event',
  timer_tick: 'timer_fire',
  system_tick: 'system_tick',
  task_result: 'task_result',
  task_status: null,
  control: null,
  internal_followup: 'internal_followup',
};

/** A queued message: the envelope every ingress path produces. */
export const MessageEnvelope = z.object({
  id: z.string(),
  agent_id: z.string(),
  seq: z.number().int().nonnegative(),
  created_at: z.string(),
  kind: MessageKind,
  origin: MessageOrigin,
  authority_class: AuthorityClass,
  priority: Priority,
  status: QueueEntryStatus,
  trigger_kind: ContinuationTriggerKind.nullable(),
  work_item_id: z.string().nullable(),
  task_id: z.string().nullable(),
  body: MessageBody.nullable(),
  idempotency_key: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  run_id: z.string().nullable(),
});
export type MessageEnvelope = z.infer<typeof MessageEnvelope>;
