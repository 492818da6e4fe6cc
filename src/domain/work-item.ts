import { z } from 'zod';

export const WorkItemState = z.enum(['open', 'completed']);
export type WorkItemState = z.infer<typeof WorkItemState>;

export const WorkItemPlanStatus = z.enum(['draft', 'ready', 'needs_input']);
export type WorkItemPlanStatus = z.infer<typeof WorkItemPlanStatus>;

/** Holon-reference §4.2: the derived per-item scheduling state. */
export const WorkItemSchedulingState = z.enum([
  'runnable',
  'waiting_operator',
  'waiting_task',
  'waiting_external',
  'waiting_timer',
  'waiting_system',
  'blocked',
  'completed',
]);
export type WorkItemSchedulingState = z.infer<typeof WorkItemSchedulingState>;

export const WorkItemRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  revision: z.number().int().positive(),
  objective: z.string(),
  state: WorkItemState,
  plan_status: WorkItemPlanStatus,
  blocked_by: z.string().nullable(),
  recheck_at: z.string().nullable(),
  result_summary: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WorkItemRecord = z.infer<typeof WorkItemRecord>;

export const WorkItemScheduling = z.object({
  scheduling_state: WorkItemSchedulingState,
  reason_code: z.string(),
  is_current: z.boolean(),
});
export type WorkItemScheduling = z.infer<typeof WorkItemScheduling>;
