import { z } from 'zod';
import { AgentIdentity, AgentState, AgentStatus, LifecyclePhase } from './agent.js';
import { ClosureDecision, PostureProjection, WaitingReason } from './scheduling.js';
import { WaitConditionRecord } from './wait.js';
import { ExternalTriggerSummary } from './trigger.js';

/** Seed 000 AgentLifecycleHint: delivery hints, not authoritative (the phase is the summary's own `phase`). */
export const LifecycleHint = z.object({
  accepts_external_messages: z.boolean(),
  operator_hint: z.string().optional(),
});
export type LifecycleHint = z.infer<typeof LifecycleHint>;

/** Seed 000 AgentSummary: a display projection assembled on read, never a scheduler input. */
export const AgentSummary = z.object({
  identity: AgentIdentity.pick({
    agent_id: true,
    kind: true,
    profile_preset: true,
    owner: true,
    mission: true,
    registry_status: true,
  }),
  /** Seed 000 AgentState; `phase` and `state_version` are the summary's own top-level fields. */
  agent: AgentState.omit({ current_work_item_id: true, phase: true, state_version: true }),
  scheduling_posture: PostureProjection,
  lifecycle: LifecycleHint,
  model: z.object({ name: z.string(), runner: z.string() }),
  token_usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
  closure: ClosureDecision,
  execution: z.object({ run_id: z.string().nullable(), turn_index: z.number().int() }),
  active_children: z.array(z.object({ agent_id: z.string(), task_id: z.string(), status: z.string() })),
  active_wait_conditions: z.array(WaitConditionRecord),
  active_external_triggers: z.array(ExternalTriggerSummary),
  phase: LifecyclePhase,
  state_version: z.number().int().nonnegative(),
  /** The current XState state value of each of the agent's live actors, keyed by actor id. */
  statechart: z.record(z.string(), z.unknown()),
});
export type AgentSummary = z.infer<typeof AgentSummary>;

export const AgentListEntry = z.object({
  agent_id: z.string(),
  status: AgentStatus,
  phase: LifecyclePhase,
  scheduling_posture: PostureProjection,
  pending: z.number().int(),
  current_run_id: z.string().nullable(),
  waiting_reason: WaitingReason.nullable(),
});
export type AgentListEntry = z.infer<typeof AgentListEntry>;
