import { z } from 'zod';
import { ClosureDecision, ContinuationResolution } from './scheduling.js';
import { MessageEnvelope } from './message.js';
import { WaitWake } from './wait.js';

/**
 * What a turn may do. A turn runner (the scripted runner, or an HTTP worker) returns these as
 * facts; the runtime applies them in one commit and the machines decide the next state.
 */
export const TurnAction = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('exec_command'),
      cmd: z.string().trim().min(1).max(16 * 1024),
      summary: z.string().max(2000).optional(),
      accepts_input: z.boolean().optional(),
      timeout_ms: z.number().int().min(1).max(24 * 3600 * 1000).optional(),
      /** Also wait for this task's result (`WaitFor(wake=task_result, resource=<new task>)`). */
      wait: z.boolean().optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('wait_for'),
      wake: WaitWake,
      reason: z.string().max(2000).optional(),
      resource: z.string().max(200).optional(),
      work_item_id: z.string().max(200).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('enqueue'),
      text: z.string().trim().min(1).max(64 * 1024),
      priority: z.enum(['interject', 'next', 'normal', 'background']).optional(),
    })
    .strict(),
  z.object({ type: z.literal('complete_work_item'), work_item_id: z.string().min(1).max(200), report: z.string().max(64 * 1024).optional() }).strict(),
  z.object({ type: z.literal('create_work_item'), objective: z.string().trim().min(1).max(4000) }).strict(),
  z.object({ type: z.literal('set_timer'), duration_ms: z.number().int().min(0), wait: z.boolean().optional() }).strict(),
  z.object({ type: z.literal('sleep') }).strict(),
  z.object({ type: z.literal('fail'), reason: z.string().max(2000) }).strict(),
]);
export type TurnAction = z.infer<typeof TurnAction>;

export const TurnResult = z.object({
  actions: z.array(TurnAction).max(64),
  text: z.string().max(64 * 1024).optional(),
});
export type TurnResult = z.infer<typeof TurnResult>;

/** What a turn sees: the claimed messages and how the agent got here. */
export const TurnOffer = z.object({
  run_id: z.string(),
  agent_id: z.string(),
  lease_ms: z.number().int().positive(),
  messages: z.array(MessageEnvelope),
  closure: ClosureDecision.nullable(),
  continuation: ContinuationResolution.nullable(),
});
export type TurnOffer = z.infer<typeof TurnOffer>;

/**
 * A turn as a worker holds it: the offer (its `run_id` is the agent's `current_run_id`, the same
 * id the summary, the list and the events carry) plus `claim_id`, which names this offer of the
 * turn. A turn whose lease expires is offered again under the same `run_id` with a new `claim_id`,
 * so a heartbeat or completion of the earlier claim is refused.
 */
export const TurnClaim = TurnOffer.extend({ claim_id: z.string() });
export type TurnClaim = z.infer<typeof TurnClaim>;

const ClaimId = z.string().min(1).max(200).describe('the claim_id the claim answered with');

export const ClaimTurnRequest = z
  .object({ agent_ids: z.array(z.string().min(1).max(128)).max(100).optional(), wait_ms: z.number().int().min(0).max(60_000).default(0) })
  .strict();
export type ClaimTurnRequest = z.infer<typeof ClaimTurnRequest>;

export const HeartbeatTurnRequest = z
  .object({
    claim_id: ClaimId,
    take_messages: z
      .boolean()
      .optional()
      .describe('a safe point: first take the queued operator interjections that may join the turn, and answer with every message of the run so far'),
  })
  .strict();
export type HeartbeatTurnRequest = z.infer<typeof HeartbeatTurnRequest>;

export const CompleteTurnRequest = TurnResult.extend({ claim_id: ClaimId }).strict();
export type CompleteTurnRequest = z.infer<typeof CompleteTurnRequest>;
