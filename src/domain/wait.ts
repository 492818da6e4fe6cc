import { z } from 'zod';

export const WaitConditionKind = z.enum(['task', 'external', 'operator', 'timer', 'system']);
export type WaitConditionKind = z.infer<typeof WaitConditionKind>;

export const WaitConditionStatus = z.enum(['active', 'triggered', 'resolved', 'cancelled', 'expired']);
export type WaitConditionStatus = z.infer<typeof WaitConditionStatus>;

/** The `wake` argument of WaitFor. */
export const WaitWake = z.enum(['task_result', 'external', 'operator_input', 'timer', 'system']);
export type WaitWake = z.infer<typeof WaitWake>;

export const WAIT_KIND_OF_WAKE: Readonly<Record<WaitWake, WaitConditionKind>> = {
  task_result: 'task',
  external: 'external',
  operator_input: 'operator',
  timer: 'timer',
  system: 'system',
};

export const WaitConditionRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  work_item_id: z.string().nullable(),
  status: WaitConditionStatus,
  kind: WaitConditionKind,
  subject_ref: z.string().nullable(),
  waiting_for: z.string(),
  wake_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  resolved_at: z.string().nullable(),
  trigger_message_id: z.string().nullable(),
});
export type WaitConditionRecord = z.infer<typeof WaitConditionRecord>;

export const ACTIVE_WAIT_STATUSES: readonly WaitConditionStatus[] = ['active', 'triggered'];
