import { z } from 'zod';

/** Seed 000 scheduling posture: derived from facts, never stored. Precedence lives in machines/contracts/posture.ts. */
export const AgentSchedulingPosture = z.enum([
  'unknown',
  'stopped',
  'active_turn',
  'has_queued_input',
  'has_runnable_work',
  'waiting_for_task',
  'waiting_for_external',
  'waiting_for_operator',
  'blocked',
  'idle',
]);
export type AgentSchedulingPosture = z.infer<typeof AgentSchedulingPosture>;

export const PostureProjection = z.object({
  posture: AgentSchedulingPosture,
  reason: z.string(),
  work_item_id: z.string().optional(),
  task_id: z.string().optional(),
  run_id: z.string().optional(),
});
export type PostureProjection = z.infer<typeof PostureProjection>;

export const ClosureOutcome = z.enum(['completed', 'continuable', 'failed', 'waiting']);
export type ClosureOutcome = z.infer<typeof ClosureOutcome>;

export const WaitingReason = z.enum([
  'awaiting_operator_input',
  'awaiting_external_change',
  'awaiting_task_result',
  'awaiting_timer',
]);
export type WaitingReason = z.infer<typeof WaitingReason>;

export const RuntimePosture = z.enum(['awake', 'sleeping']);
export type RuntimePosture = z.infer<typeof RuntimePosture>;

export const WorkReactivationMode = z.enum(['continue_active', 'activate_queued']);
export type WorkReactivationMode = z.infer<typeof WorkReactivationMode>;

export const WorkSignal = z.object({
  work_item_id: z.string(),
  state: z.string(),
  reactivation_mode: WorkReactivationMode,
});
export type WorkSignal = z.infer<typeof WorkSignal>;

/** Seed 000 closure: `waiting_reason` is present iff `outcome` is `waiting`. */
export const ClosureDecision = z.object({
  outcome: ClosureOutcome,
  waiting_reason: WaitingReason.nullable(),
  work_signal: WorkSignal.nullable(),
  runtime_posture: RuntimePosture,
  evidence: z.array(z.string()),
});
export type ClosureDecision = z.infer<typeof ClosureDecision>;

/** Seed 003 trigger kinds. */
export const ContinuationTriggerKind = z.enum([
  'operator_input',
  'task_result',
  'external_event',
  'timer_fire',
  'internal_followup',
  'system_tick',
]);
export type ContinuationTriggerKind = z.infer<typeof ContinuationTriggerKind>;

/** Seed 003 continuation classes (seed 000 lists the same five). */
export const ContinuationClass = z.enum([
  'resume_expected_wait',
  'resume_override',
  'local_continuation',
  'task_result_reentry',
  'liveness_only',
]);
export type ContinuationClass = z.infer<typeof ContinuationClass>;

export const ContinuationResolution = z.object({
  trigger_kind: ContinuationTriggerKind,
  class: ContinuationClass,
  model_reentry: z.boolean(),
  prior_closure_outcome: ClosureOutcome,
  prior_waiting_reason: WaitingReason.nullable(),
  matched_waiting_reason: z.boolean(),
  evidence: z.array(z.string()),
});
export type ContinuationResolution = z.infer<typeof ContinuationResolution>;

export const SchedulerDecisionKind = z.enum([
  'start_model_turn',
  'reduce_message_only',
  'emit_system_tick',
  'wait_for_task',
  'wait_for_external_change',
  'wait_for_timer',
  'wait_for_operator',
  'sleep',
  'stay_idle',
  'stop',
  'noop',
]);
export type SchedulerDecisionKind = z.infer<typeof SchedulerDecisionKind>;

export const DecisionBoundary = z.enum([
  'run_loop',
  'run_loop_idle',
  'lifecycle_sleep',
  'message_processing',
  'idle_tick',
  'bootstrap_recovery',
]);
export type DecisionBoundary = z.infer<typeof DecisionBoundary>;

export const SchedulerDecision = z.object({
  kind: SchedulerDecisionKind,
  reason: z.string(),
  model_reentry: z.boolean(),
  liveness_only: z.boolean(),
  message_id: z.string().optional(),
  work_item_id: z.string().optional(),
  task_id: z.string().optional(),
  boundary: DecisionBoundary.optional(),
  evidence: z.array(z.string()),
});
export type SchedulerDecision = z.infer<typeof SchedulerDecision>;

/** Seed 003 / holon-reference §7.2. */
export const WakeDisposition = z.enum(['triggered', 'coalesced', 'ignored']);
export type WakeDisposition = z.infer<typeof WakeDisposition>;
