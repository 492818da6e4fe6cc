import { z } from 'zod';
import {
  StateAccepts,
  ActorNode,
  AgentEvent,
  AgentId,
  AgentListEntry,
  AgentStateView,
  AgentSummary,
  CallbackResult,
  DeliveryMode,
  ErrorEnvelope,
  EventsPage,
  ExternalTriggerSummary,
  MessageAccepted,
  MessageEnvelope,
  Readiness,
  Snapshot,
  TaskInputResult,
  TaskOutputResult,
  TaskRecord,
  TaskStopResult,
  TimerRecord,
  TransitionRecord,
  TurnClaim,
  TurnOffer,
  WaitConditionRecord,
  WakeResult,
  WorkItemView,
} from '../domain/index.js';

/**
 * Wire schemas of the HTTP layer. Entity schemas are registered in zod's global registry under
 * unique ids so the OpenAPI document `$ref`s them (`#/components/schemas/<id>`). The registry does
 * not reject duplicate ids (a duplicate silently re-points every `$ref`), so every id lives here.
 */
const COMPONENTS: ReadonlyArray<readonly [z.ZodType, string]> = [
  [ErrorEnvelope, 'ErrorEnvelope'],
  [AgentSummary, 'AgentSummary'],
  [AgentListEntry, 'AgentListEntry'],
  [AgentStateView, 'AgentStateView'],
  [TransitionRecord, 'TransitionRecord'],
  [Snapshot, 'Snapshot'],
  [MessageEnvelope, 'MessageEnvelope'],
  [WorkItemView, 'WorkItemView'],
  [WaitConditionRecord, 'WaitConditionRecord'],
  [TimerRecord, 'TimerRecord'],
  [TaskRecord, 'TaskRecord'],
  [TaskOutputResult, 'TaskOutputResult'],
  [ExternalTriggerSummary, 'ExternalTriggerSummary'],
  [AgentEvent, 'AgentEvent'],
  [EventsPage, 'EventsPage'],
  [TurnOffer, 'TurnOffer'],
  [TurnClaim, 'TurnClaim'],
  [Readiness, 'Readiness'],
  [ActorNode, 'ActorNode'],
  [StateAccepts, 'StateAccepts'],
];
for (const [schema, id] of COMPONENTS) {
  if (!z.globalRegistry.has(schema)) z.globalRegistry.add(schema, { id });
}

const okTrue = z.literal(true);

// ---- params -------------------------------------------------------------------------------

const ResourceId = z.string().min(1).max(200);
export const AgentParams = z.object({ id: AgentId });
export const WorkItemParams = AgentParams.extend({ wid: ResourceId });
export const WaitParams = AgentParams.extend({ wait_id: ResourceId });
export const TimerParams = AgentParams.extend({ tid: ResourceId });
export const TaskParams = AgentParams.extend({ tid: ResourceId });
export const TriggerParams = AgentParams.extend({ trid: ResourceId });
export const SnapshotParams = AgentParams.extend({ sid: ResourceId });
export const RunParams = z.object({ run_id: ResourceId });
export const CallbackParams = z.object({ token: z.string().min(1).max(512) });
export const MachineParams = z.object({ name: z.string().min(1).max(100) });

/** The request headers the contract defines; other headers pass through untouched. */
export const MutationHeaders = z.looseObject({
  'idempotency-key': z.string().optional().describe('Retry key: same key + same request → the stored response, replayed'),
  'if-match': z.string().optional().describe('`"<state_version>"`: refuse with 409 version_conflict unless current'),
});
export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z.string().optional().describe('Retry key: same key + same request → the stored response, replayed'),
});
export const StreamHeaders = z.looseObject({
  'last-event-id': z.string().optional().describe('Resume after this event_seq (wins over `after_seq`)'),
});

/** The query of routes that take none: unknown query fields are refused like unknown body fields. */
export const NoQuery = z.object({}).strict();

/** Bodies of routes that take none: absent (Fastify validates a missing body as `null`) or `{}`. */
export const EmptyBody = z.object({}).strict().nullish();

export const StreamQuery = z.object({ after_seq: z.coerce.number().int().min(0).optional() }).strict();
export const TransitionsQuery = z
  .object({
    after_seq: z.coerce.number().int().min(0).optional(),
    limit: z.coerce.number().int().min(1).max(512).default(128),
  })
  .strict();

// ---- responses ----------------------------------------------------------------------------

export const AgentResponse = z.object({ ok: okTrue, agent: AgentSummary }).meta({ id: 'AgentResponse' });

/** `trigger_url` is absent when the runtime cannot show the token again (a replayed create). */
export const CapabilityUrl = z
  .object({ trigger_url: z.string().optional(), delivery_mode: DeliveryMode })
  .meta({ id: 'CapabilityUrl' });

export const CreateAgentResponse = z
  .object({ ok: okTrue, agent: AgentSummary, external_trigger: CapabilityUrl })
  .meta({ id: 'CreateAgentResponse' });

/** `trigger_url` is shown once: a replayed response cannot show it again (the token is never stored). */
export const TriggerCreatedResponse = z
  .object({
    ok: okTrue,
    trigger: ExternalTriggerSummary,
    delivery_mode: DeliveryMode,
    trigger_url: z.string().optional(),
  })
  .meta({ id: 'TriggerCreatedResponse' });

export const TriggerResponse = ExternalTriggerSummary.extend({ ok: okTrue }).meta({ id: 'TriggerResponse' });

/** The contract's TaskStatus: the task record plus `task_id` (= `id`). */
export const TaskStatusView = TaskRecord.extend({ task_id: z.string() }).meta({ id: 'TaskStatus' });
export const TaskStatusResponse = TaskStatusView.extend({ ok: okTrue }).meta({ id: 'TaskStatusResponse' });
export const TaskInputResponse = TaskInputResult.extend({ ok: okTrue }).meta({ id: 'TaskInputResponse' });
export const TaskStopResponse = TaskStopResult.extend({ ok: okTrue }).meta({ id: 'TaskStopResponse' });

export const TransitionResponse = TransitionRecord.extend({ ok: okTrue }).meta({ id: 'TransitionResponse' });
export const SnapshotResponse = Snapshot.extend({ ok: okTrue }).meta({ id: 'SnapshotResponse' });
export const MessageAcceptedResponse = MessageAccepted.extend({ ok: okTrue }).meta({ id: 'MessageAcceptedResponse' });
export const WakeResponse = WakeResult.extend({ ok: okTrue }).meta({ id: 'WakeResponse' });
export const WorkItemResponse = WorkItemView.extend({ ok: okTrue }).meta({ id: 'WorkItemResponse' });
export const WaitResponse = WaitConditionRecord.extend({ ok: okTrue }).meta({ id: 'WaitResponse' });
export const TimerResponse = TimerRecord.extend({ ok: okTrue }).meta({ id: 'TimerResponse' });
export const CallbackResponse = CallbackResult.extend({ ok: okTrue }).meta({ id: 'CallbackResponse' });
export const AbortRunResponse = z
  .object({ ok: okTrue, agent_id: z.string(), run_id: z.string(), aborted: z.literal(true) })
  .meta({ id: 'AbortRunResponse' });

export const TurnClaimResponse = TurnClaim.extend({ ok: okTrue, summary: AgentSummary }).meta({ id: 'TurnClaimResponse' });
export const TurnHeartbeatResponse = z
  .object({ ok: okTrue, run_id: z.string(), claim_id: z.string(), lease_expires_at: z.string() })
  .meta({ id: 'TurnHeartbeatResponse' });
export const TurnCompleteResponse = z
  .object({ ok: okTrue, run_id: z.string(), applied: z.boolean() })
  .meta({ id: 'TurnCompleteResponse' });

function page<T extends z.ZodType>(item: T, id: string) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() }).meta({ id });
}
export const AgentListPage = page(AgentListEntry, 'AgentListPage');
export const TransitionPage = page(TransitionRecord, 'TransitionPage');
export const SnapshotPage = page(Snapshot, 'SnapshotPage');
export const WorkItemPage = page(WorkItemView, 'WorkItemPage');
export const TimerPage = page(TimerRecord, 'TimerPage');
export const TaskPage = page(TaskStatusView, 'TaskPage');

export const MachineSummaryView = z
  .object({ name: z.string(), states: z.number().int().nonnegative(), transitions: z.number().int().nonnegative() })
  .meta({ id: 'MachineSummary' });
export const MachineList = z.object({ items: z.array(MachineSummaryView) }).meta({ id: 'MachineList' });
export const MachineDetail = MachineSummaryView.extend({ definition: z.unknown(), mermaid: z.string() }).meta({
  id: 'MachineDetail',
});

export const HandshakeResponse = z
  .object({
    ok: okTrue,
    protocol: z.object({ name: z.literal('holon-xstate'), version: z.literal(1) }),
    auth: z.object({ mode: z.enum(['bearer', 'local']), required: z.boolean() }),
    capabilities: z.array(z.string()),
    runtime: z.object({ node_id: z.string(), store: z.string(), started_at: z.string() }),
  })
  .meta({ id: 'Handshake' });
export const HealthResponse = z.object({ ok: okTrue, uptime_s: z.number() }).meta({ id: 'Health' });
export const OpenApiDocument = z.record(z.string(), z.unknown()).meta({ id: 'OpenApiDocument' });

/** The SSE response, documented as its media type (the body is never serialized by Fastify). */
export const EventStreamResponse = {
  description: 'Server-sent events: `id:` = event_seq, `event:` = type, `data:` = the AgentEvent JSON',
  content: { 'text/event-stream': { schema: z.string() } },
};
export const ArtifactResponse = {
  description: 'The full output of the task',
  content: { 'application/octet-stream': { schema: z.string() } },
};

// ---- error responses ----------------------------------------------------------------------

type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 409 | 413 | 422 | 500 | 503;

function errorMap(statuses: readonly ErrorStatus[]): Partial<Record<ErrorStatus, typeof ErrorEnvelope>> {
  const out: Partial<Record<ErrorStatus, typeof ErrorEnvelope>> = {};
  for (const status of statuses) out[status] = ErrorEnvelope;
  return out;
}

/** Error responses of an `/api/*` route: the common ones (400, 401, 500, 503) plus `extra`. */
export function apiErrors(...extra: ErrorStatus[]) {
  return errorMap([400, 401, 500, 503, ...extra]);
}

/** Error responses of an open route (no bearer token involved). */
export function openErrors(...extra: ErrorStatus[]) {
  return errorMap([400, 500, 503, ...extra]);
}
