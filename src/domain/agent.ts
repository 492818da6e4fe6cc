import { z } from 'zod';
import { ContinuationResolution } from './scheduling.js';

/** Seed 000 lifecycle label (`AgentState.status`), snake_case on the wire. */
export const AgentStatus = z.enum(['booting', 'awake_idle', 'awake_running', 'awaiting_task', 'asleep', 'stopped']);
export type AgentStatus = z.infer<typeof AgentStatus>;

/** Seed 002 lifecycle phase: the agent's logical existence, not an OS process. */
export const LifecyclePhase = z.enum([
  'created',
  'initializing',
  'active',
  'sleeping',
  'waking',
  'recovering',
  'evolving',
  'terminating',
  'terminated',
]);
export type LifecyclePhase = z.infer<typeof LifecyclePhase>;

/** Phases a seed-002 transition protocol is open in: entered by a request, left by its effect's outcome. */
export const TRANSITIONAL_PHASES: readonly LifecyclePhase[] = ['initializing', 'waking', 'recovering', 'evolving', 'terminating'];

/** Seed 000: `Start` hands the agent to the scheduler, `Stop` makes it unrunnable. No pause/resume. */
export const ControlAction = z.enum(['start', 'stop']);
export type ControlAction = z.infer<typeof ControlAction>;

export const AgentRegistryStatus = z.enum(['active', 'deleting', 'deleted']);
export type AgentRegistryStatus = z.infer<typeof AgentRegistryStatus>;

export const AgentId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'agent ids use letters, digits, ".", "_" and "-"');
export type AgentId = z.infer<typeof AgentId>;

export const IsoTime = z.iso.datetime({ offset: true });

/** The persisted core state of an agent (seed 000 `AgentState`). */
export const AgentState = z.object({
  agent_id: AgentId,
  status: AgentStatus,
  phase: LifecyclePhase,
  state_version: z.number().int().nonnegative(),
  current_run_id: z.string().nullable(),
  current_work_item_id: z.string().nullable(),
  pending: z.number().int().nonnegative(),
  turn_index: z.number().int().nonnegative(),
  sleeping_until: IsoTime.nullable(),
  last_continuation: ContinuationResolution.nullable(),
});
export type AgentState = z.infer<typeof AgentState>;


export const AgentIdentity = z.object({
  agent_id: AgentId,
  kind: z.string(),
  profile_preset: z.string(),
  owner: z.string(),
  mission: z.string(),
  registry_status: AgentRegistryStatus,
  identity_version: z.number().int().positive(),
  parent_agent_id: AgentId.nullable(),
  created_at: IsoTime,
});
export type AgentIdentity = z.infer<typeof AgentIdentity>;

/** Agent configuration accepted at creation. */
export const AgentConfig = z
  .object({
    turn_runner: z.enum(['scripted', 'http_worker']).default('scripted'),
    model: z.string().max(200).default('scripted'),
  })
  .strict();
export type AgentConfig = z.infer<typeof AgentConfig>;
