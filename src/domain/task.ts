import { z } from 'zod';

export const TaskKind = z.enum(['command_task', 'child_agent_task', 'actor_invocation', 'sleep_job']);
export type TaskKind = z.infer<typeof TaskKind>;

export const TaskStatus = z.enum(['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'interrupted']);
export type TaskStatus = z.infer<typeof TaskStatus>;

export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled', 'interrupted'];

export const TaskOutputRetrievalStatus = z.enum(['success', 'timeout', 'not_ready']);
export type TaskOutputRetrievalStatus = z.infer<typeof TaskOutputRetrievalStatus>;

export const TaskRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  kind: TaskKind,
  status: TaskStatus,
  summary: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  work_item_id: z.string().nullable(),
  parent_run_id: z.string().nullable(),
  accepts_input: z.boolean(),
  cmd: z.string().nullable(),
  workdir: z.string().nullable(),
  timeout_ms: z.number().int().positive().nullable(),
  exit_code: z.number().int().nullable(),
  /** Why a task ended the way it did: `timeout`, `agent_stopped`, `runtime_restarted`, `spawn_failed`, ... */
  reason: z.string().nullable(),
  child_agent_id: z.string().nullable(),
  output_bytes: z.number().int().nonnegative(),
  result_text: z.string().nullable(),
});
export type TaskRecord = z.infer<typeof TaskRecord>;
