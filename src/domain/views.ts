import { z } from 'zod';
import { TaskOutputRetrievalStatus, TaskRecord, TaskStatus } from './task.js';
import { WorkItemRecord, WorkItemScheduling } from './work-item.js';
import { WakeDisposition, SchedulerDecision } from './scheduling.js';
import { AgentSummary } from './summary.js';
import { MessageEnvelope } from './message.js';
import { TimerRecord } from './timer.js';
import { WaitConditionRecord } from './wait.js';
import { ExternalTriggerSummary, DeliveryMode } from './trigger.js';
import { AgentEvent } from './event.js';

/** Results of runtime operations (the HTTP layer serializes exactly these). */
export const WorkItemView = WorkItemRecord.extend({ scheduling: WorkItemScheduling });
export type WorkItemView = z.infer<typeof WorkItemView>;

export const MessageAccepted = z.object({ agent_id: z.string(), message_id: z.string() });
export type MessageAccepted = z.infer<typeof MessageAccepted>;

export const WakeResult = z.object({ agent_id: z.string(), disposition: WakeDisposition });
export type WakeResult = z.infer<typeof WakeResult>;

export const TaskOutputResult = z.object({
  task_id: z.string(),
  status: TaskStatus,
  retrieval_status: TaskOutputRetrievalStatus,
  output_preview: z.string(),
  output_bytes: z.number().int().nonnegative(),
  truncated: z.boolean(),
  exit_code: z.number().int().nullable(),
  artifact: z.object({ path: z.string(), bytes: z.number().int().nonnegative() }),
});
export type TaskOutputResult = z.infer<typeof TaskOutputResult>;

export const TaskInputResult = z.object({ task: TaskRecord, accepted_input: z.boolean(), bytes_written: z.number().int() });
export type TaskInputResult = z.infer<typeof TaskInputResult>;

export const TaskStopResult = z.object({ task: TaskRecord, stop_requested: z.boolean(), force_stop_requested: z.boolean() });
export type TaskStopResult = z.infer<typeof TaskStopResult>;

/** A freshly minted capability: the only place the raw token ever appears. */
export const TriggerCapability = z.object({
  trigger: ExternalTriggerSummary,
  token: z.string(),
  delivery_mode: DeliveryMode,
});
export type TriggerCapability = z.infer<typeof TriggerCapability>;

export const CallbackResult = z.object({
  agent_id: z.string(),
  delivery_id: z.string(),
  external_trigger_id: z.string(),
  delivery_mode: DeliveryMode,
  disposition: z.enum(['triggered', 'coalesced', 'ignored', 'enqueued']),
  message_id: z.string().optional(),
});
export type CallbackResult = z.infer<typeof CallbackResult>;

export const EventsPage = z.object({
  events: z.array(AgentEvent),
  oldest_seq: z.number().int().nonnegative(),
  newest_seq: z.number().int().nonnegative(),
  cursor_seq: z.number().int().nonnegative(),
  has_older: z.boolean(),
  has_newer: z.boolean(),
});
export type EventsPage = z.infer<typeof EventsPage>;

export const AgentStateView = z.object({
  summary: AgentSummary,
  queue: z.array(MessageEnvelope),
  tasks: z.array(TaskRecord),
  timers: z.array(TimerRecord),
  work_items: z.array(WorkItemView),
  waits: z.array(WaitConditionRecord),
  triggers: z.array(ExternalTriggerSummary),
  last_decision: SchedulerDecision.nullable(),
});
export type AgentStateView = z.infer<typeof AgentStateView>;

export const ActorNode: z.ZodType<ActorNodeShape> = z.lazy(() =>
  z.object({ id: z.string(), machine: z.string(), state: z.unknown(), children: z.array(ActorNode) }),
);
export interface ActorNodeShape {
  id: string;
  machine: string;
  state: unknown;
  children: ActorNodeShape[];
}

export const Readiness = z.object({
  ok: z.boolean(),
  process: z.object({ pid: z.number().int(), uptime_s: z.number() }),
  lease: z.object({ held: z.boolean(), holder: z.string().nullable(), expires_at: z.string().nullable(), fencing_token: z.number().int() }),
  dependencies: z.object({ store: z.object({ ok: z.boolean(), kind: z.string() }) }),
  /**
   * A cluster node (PostgreSQL store) only: its id, the agent leases it holds, and its last
   * heartbeat to the database (outcome and age; `ok: null` before it registered).
   */
  node: z
    .object({
      node_id: z.string(),
      agent_leases_held: z.number().int(),
      live_nodes: z.number().int().nullable(),
      heartbeat: z.object({ ok: z.boolean().nullable(), age_ms: z.number().int().nullable(), error: z.string().nullable() }),
    })
    .optional(),
  progress: z.object({
    last_commit_at: z.string().nullable(),
    stalled_agents: z.array(z.string()),
    /** Agents left waiting on something that can no longer happen (a wait on a task or timer that ended with nothing on the way). */
    stranded_agents: z.array(z.object({ agent_id: z.string(), waits: z.array(z.object({ wait_id: z.string(), reason: z.string() })) })),
  }),
});
export type Readiness = z.infer<typeof Readiness>;
