import { z } from 'zod';

export const EventType = z.enum([
  'agent_created',
  'transition_committed',
  'transition_phase',
  'message_queued',
  'scheduler_decision',
  'turn_started',
  'turn_interjected',
  'turn_finished',
  'continuation_resolved',
  'wake_hint',
  'task_status_changed',
  'task_input',
  'timer_created',
  'timer_fired',
  'timer_cancelled',
  'wait_created',
  'wait_resolved',
  'wait_cancelled',
  'work_item_created',
  'work_item_updated',
  'work_item_completed',
  'trigger_created',
  'trigger_revoked',
  'callback_delivered',
  'snapshot_taken',
  'control_applied',
  'current_run_aborted',
  'effect_recorded',
]);
export type EventType = z.infer<typeof EventType>;

/** One entry of an agent's append-only event log; `event_seq` is per agent, dense and durable. */
export const AgentEvent = z.object({
  id: z.string(),
  event_seq: z.number().int().positive(),
  ts: z.string(),
  agent_id: z.string(),
  type: EventType,
  payload: z.record(z.string(), z.unknown()),
});
export type AgentEvent = z.infer<typeof AgentEvent>;
