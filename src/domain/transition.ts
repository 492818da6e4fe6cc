import { z } from 'zod';
import { LifecyclePhase } from './agent.js';

/** Who or what caused a transition (seed 002: user | agent | system event | recovery). */
export const TransitionTrigger = z.enum(['user', 'agent', 'system', 'recovery']);
export type TransitionTrigger = z.infer<typeof TransitionTrigger>;

/** Seed 002 five-phase protocol for transitions with side effects. */
export const TransitionProtocolPhase = z.enum([
  'transition_requested',
  'guard_checked',
  'transition_prepared',
  'side_effects_applied',
  'transition_committed',
]);
export type TransitionProtocolPhase = z.infer<typeof TransitionProtocolPhase>;

export const TransitionActor = z.object({
  initiator: z.string(),
  principal: z.string(),
});
export type TransitionActor = z.infer<typeof TransitionActor>;

export const TransitionPhaseLog = z.object({
  phase: TransitionProtocolPhase,
  at: z.string(),
  detail: z.string().optional(),
});
export type TransitionPhaseLog = z.infer<typeof TransitionPhaseLog>;

/** Seed 002 TransitionRecord: every field the seed lists, plus the protocol phases it went through. */
export const TransitionRecord = z.object({
  transition_id: z.string(),
  agent_id: z.string(),
  seq: z.number().int().positive(),
  from_state: z.string(),
  to_state: z.string(),
  from_phase: LifecyclePhase,
  to_phase: LifecyclePhase,
  reason: z.string(),
  trigger: TransitionTrigger,
  expected_version: z.number().int().nonnegative(),
  requested_at: z.string(),
  committed_at: z.string(),
  actor: TransitionActor,
  evidence_refs: z.array(z.string()),
  phases: z.array(TransitionPhaseLog),
});
export type TransitionRecord = z.infer<typeof TransitionRecord>;

/** Target phases a client may request through the transitions route. */
export const TransitionTarget = z.enum([
  'sleeping',
  'waking',
  'active',
  'evolving',
  'recovering',
  'terminating',
  'terminated',
]);
export type TransitionTarget = z.infer<typeof TransitionTarget>;
