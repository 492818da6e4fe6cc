import { z } from 'zod';
import { AgentConfig, AgentId, AgentStatus, ControlAction } from './agent.js';
import { TransitionTarget } from './transition.js';
import { WaitWake } from './wait.js';
import { DeliveryMode } from './trigger.js';
import { WorkItemPlanStatus } from './work-item.js';

/**
 * Inputs of every runtime operation. The HTTP layer validates bodies with these same schemas, so
 * the runtime API and the wire contract cannot drift. Objects are strict: unknown fields are refused.
 */
const text = (max: number) => z.string().max(max);
const nonBlank = (max: number) => z.string().trim().min(1).max(max);
const Version = z.number().int().nonnegative();

export const CreateAgentRequest = z
  .object({
    agent_id: AgentId.optional(),
    mission: text(4000).optional(),
    owner: text(200).optional(),
    profile: text(200).optional(),
    config: AgentConfig.optional(),
  })
  .strict();
export type CreateAgentRequest = z.infer<typeof CreateAgentRequest>;

export const ControlRequest = z.object({ action: ControlAction, expected_version: Version.optional() }).strict();
export type ControlRequest = z.infer<typeof ControlRequest>;

export const TransitionRequest = z
  .object({
    transition_id: nonBlank(200),
    to: TransitionTarget,
    reason: nonBlank(2000),
    expected_version: Version,
    actor: z.object({ initiator: nonBlank(200), principal: nonBlank(200) }).strict().optional(),
    evidence_refs: z.array(text(500)).max(64).optional(),
  })
  .strict();
export type TransitionRequest = z.infer<typeof TransitionRequest>;

export const PromptRequest = z
  .object({ text: nonBlank(64 * 1024), work_item_id: z.string().min(1).max(200).optional() })
  .strict();
export type PromptRequest = z.infer<typeof PromptRequest>;

/** Public ingress: only channel/webhook kinds and non-interject lanes (holon-reference §11). */
export const EnqueueRequest = z
  .object({
    kind: z.enum(['channel_event', 'webhook_event']).default('webhook_event'),
    priority: z.enum(['next', 'normal', 'background']).default('normal'),
    text: text(64 * 1024).optional(),
    json: z.unknown().optional(),
    origin: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.literal('channel'), channel_id: nonBlank(200), sender_id: text(200).optional() }).strict(),
        z.object({ kind: z.literal('webhook'), source: nonBlank(200), event_type: text(200).optional() }).strict(),
      ])
      .optional(),
  })
  .strict();
export type EnqueueRequest = z.infer<typeof EnqueueRequest>;

export const WakeRequest = z.object({ reason: nonBlank(2000), source: text(200).optional() }).strict();
export type WakeRequest = z.infer<typeof WakeRequest>;

export const CreateWorkItemRequest = z.object({ objective: nonBlank(4000) }).strict();
export type CreateWorkItemRequest = z.infer<typeof CreateWorkItemRequest>;

export const UpdateWorkItemRequest = z
  .object({
    objective: nonBlank(4000).optional(),
    plan_status: WorkItemPlanStatus.optional(),
    blocked_by: text(2000).nullable().optional(),
  })
  .strict()
  .refine((u) => Object.keys(u).length > 0, { message: 'an update must change at least one field' });
export type UpdateWorkItemRequest = z.infer<typeof UpdateWorkItemRequest>;

export const PickWorkItemRequest = z
  .object({ reason: text(2000).optional(), clear_blocker: z.boolean().default(false) })
  .strict()
  .refine((p) => !p.clear_blocker || (p.reason ?? '').trim().length > 0, {
    message: 'clear_blocker needs a reason',
    path: ['reason'],
  });
export type PickWorkItemRequest = z.infer<typeof PickWorkItemRequest>;

export const CompleteWorkItemRequest = z.object({ report_text: nonBlank(64 * 1024) }).strict();
export type CompleteWorkItemRequest = z.infer<typeof CompleteWorkItemRequest>;

export const CreateWaitRequest = z
  .object({
    wake: WaitWake,
    reason: nonBlank(2000).default('waiting'),
    resource: z.string().min(1).max(200).optional(),
    work_item_id: z.string().min(1).max(200).optional(),
    wake_at: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((w) => !(w.wake === 'task_result' || w.wake === 'timer') || w.resource !== undefined, {
    message: 'task_result and timer waits need a resource (the task or timer id)',
    path: ['resource'],
  });
export type CreateWaitRequest = z.infer<typeof CreateWaitRequest>;

export const CreateTimerRequest = z
  .object({
    duration_ms: z.number().int().min(0).max(365 * 24 * 3600 * 1000),
    interval_ms: z.number().int().min(10).max(365 * 24 * 3600 * 1000).optional(),
    summary: text(2000).optional(),
  })
  .strict();
export type CreateTimerRequest = z.infer<typeof CreateTimerRequest>;

export const ExecCommandRequest = z
  .object({
    summary: nonBlank(2000),
    cmd: nonBlank(16 * 1024),
    workdir: z.string().min(1).max(4096).optional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), text(16 * 1024)).optional(),
    accepts_input: z.boolean().default(false),
    timeout_ms: z.number().int().min(1).max(24 * 3600 * 1000).optional(),
    work_item_id: z.string().min(1).max(200).optional(),
  })
  .strict();
export type ExecCommandRequest = z.infer<typeof ExecCommandRequest>;

export const InvokeAgentRequest = z
  .object({ target_agent_id: AgentId.optional(), prompt: nonBlank(64 * 1024), summary: nonBlank(2000) })
  .strict();
export type InvokeAgentRequest = z.infer<typeof InvokeAgentRequest>;

const BoolQuery = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

export const TaskOutputQuery = z
  .object({
    block: BoolQuery.default(false),
    timeout_ms: z.coerce.number().int().min(0).max(300_000).default(30_000),
    max_bytes: z.coerce.number().int().min(1).max(65_536).default(8_000),
  })
  .strict();
export type TaskOutputQuery = z.infer<typeof TaskOutputQuery>;

export const TaskInputRequest = z.object({ text: text(64 * 1024) }).strict();
export type TaskInputRequest = z.infer<typeof TaskInputRequest>;

export const CreateTriggerRequest = z.object({ delivery_mode: DeliveryMode }).strict();
export type CreateTriggerRequest = z.infer<typeof CreateTriggerRequest>;

export const AbortRunRequest = z.object({ run_id: z.string().min(1).max(200).optional() }).strict();
export type AbortRunRequest = z.infer<typeof AbortRunRequest>;

export const EventsQuery = z
  .object({
    after_seq: z.coerce.number().int().min(0).optional(),
    before_seq: z.coerce.number().int().min(1).optional(),
    limit: z.coerce.number().int().min(1).max(512).default(128),
    order: z.enum(['asc', 'desc']).default('asc'),
  })
  .strict();
export type EventsQuery = z.infer<typeof EventsQuery>;

export const PageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(512).default(128),
    cursor: z.string().max(400).optional(),
  })
  .strict();
export type PageQuery = z.infer<typeof PageQuery>;

/** `ListAgents`' query: a page of the roster, optionally only ids containing `q` (any case) or one `status`. */
export const AgentListQuery = PageQuery.extend({
  q: z.string().trim().min(1).max(128).optional(),
  status: AgentStatus.optional(),
}).strict();
export type AgentListQuery = z.infer<typeof AgentListQuery>;

