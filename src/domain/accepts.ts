import { z } from 'zod';
import { AgentStatus, LifecyclePhase } from './agent.js';

/** One HTTP request that sends an agent a machine event. */
export const ControlRoute = z.object({
  method: z.enum(['POST', 'DELETE']),
  path: z.string(),
  /** Headers the request needs besides auth (a retried create's Idempotency-Key). */
  headers: z.record(z.string(), z.string()).optional(),
  /** A body that sends this event now (placeholders in angle brackets), or null for none. */
  body: z.unknown(),
  /** The JSON Schema of the route's request body, or null for a route without one (absent in a refusal's `details`). */
  schema: z.unknown().optional(),
});
export type ControlRoute = z.infer<typeof ControlRoute>;

/** A public machine event the agent's current state accepts (`snapshot.can`), and where it leads. */
export const AcceptedControl = z.object({
  event: z.string(),
  /** The state the machine would take on it now (`active.awakeIdle`, `waking` ...). */
  leads_to: z.string(),
  requests: z.array(ControlRoute),
});
export type AcceptedControl = z.infer<typeof AcceptedControl>;

/** `GET /api/agents/:id/accepts`: computed from the committed machine snapshot, never stored. */
export const StateAccepts = z.object({
  agent_id: z.string(),
  state: z.string(),
  phase: LifecyclePhase,
  status: AgentStatus,
  state_version: z.number().int().nonnegative(),
  accepts: z.array(AcceptedControl),
});
export type StateAccepts = z.infer<typeof StateAccepts>;
