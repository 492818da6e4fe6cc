import { z } from 'zod';
import {
  StateAccepts,
  ActorNode,
  AgentAccepts,
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
  TypedAgentEvent,
  WaitConditionRecord,
  WakeResult,
  WorkItemView,
} from '../domain/index.js';
import { InspectorChart } from './inspector/charts.js';

/**
 * Wire schemas of the HTTP layer. Entity schemas are registered in zod's global registry under
 * unique ids so the OpenAPI document `$ref`s them (`#/components/schemas/<id>`). The registry does
 * not reject duplicate ids (a duplicate silently re-points every `$ref`), so every id lives here.
 */
/** The events page as clients see it: each event typed by its `type` (see TypedAgentEvent). */
export const EventsPageView = EventsPage.extend({ events: z.array(TypedAgentEvent) });

const COMPONENTS: ReadonlyArray<readonly [z.ZodType, string, string]> = [
  [ErrorEnvelope, 'ErrorEnvelope', 'Every non-2xx answer: `{ok:false, error:{code, message, retryable, details?}}`'],
  [AgentSummary, 'AgentSummary', "The agent's AgentSummary, assembled now from its records (docs/agent-summary.md)"],
  [AgentListEntry, 'AgentListEntry', 'One agent of the roster'],
  [AgentStateView, 'AgentStateView', 'Bounded bootstrap of one agent: summary, queue, tasks, timers, work items, waits, triggers'],
  [TransitionRecord, 'TransitionRecord', 'A committed lifecycle transition (seed 002), with its logged phases'],
  [Snapshot, 'Snapshot', 'A recovery snapshot (seed-002 tree, schema_version, checksum)'],
  [MessageEnvelope, 'MessageEnvelope', 'A queued message'],
  [WorkItemView, 'WorkItemView', 'A work item with its derived scheduling state'],
  [WaitConditionRecord, 'WaitConditionRecord', 'A wait condition'],
  [TimerRecord, 'TimerRecord', 'A durable timer'],
  [TaskRecord, 'TaskRecord', 'A task (seed 004)'],
  [TaskOutputResult, 'TaskOutputResult', "The task's bounded output preview, its artifact and whether it was truncated"],
  [ExternalTriggerSummary, 'ExternalTriggerSummary', 'An external trigger: id, delivery mode, status (never the token)'],
  [TypedAgentEvent, 'AgentEvent', "One event of an agent's durable log, discriminated by `type`"],
  [EventsPageView, 'EventsPage', "A page of the agent's event log with the retained window's bounds"],
  [TurnOffer, 'TurnOffer', 'A turn offered to an HTTP worker'],
  [TurnClaim, 'TurnClaim', 'A turn claimed by an HTTP worker: its run, claim, lease and messages'],
  [Readiness, 'Readiness', 'Readiness: process, lease, dependencies, progress'],
  [ActorNode, 'ActorNode', "The agent's live actor tree"],
  [AgentAccepts, 'AgentAccepts', "The events each of the agent's actors accepts in its current state, read from the machines"],
  [StateAccepts, 'StateAccepts', 'The public events the agent\'s current state accepts (snapshot.can), where each leads, and the requests that send it'],
  [InspectorChart, 'InspectorChart', "A machine's drawing with the map from its states and transitions to the drawing's nodes and edges"],
];
for (const [schema, id, description] of COMPONENTS) {
  if (!z.globalRegistry.has(schema)) z.globalRegistry.add(schema, { id, description });
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

export const AgentResponse = z
  .object({
    ok: okTrue,
    agent: AgentSummary,
    hint: z.string().optional().describe('What to do next, when there is something to say (after Start: how to get a new capability URL)'),
  })
  .meta({ id: 'AgentResponse', description: 'The agent after the operation: `agent` is its AgentSummary' });

/** `trigger_url` is absent when the runtime cannot show the token again (a replayed create); `note` then says so. */
export const CapabilityUrl = z
  .object({
    trigger_url: z.string().optional().describe('The capability URL; only in the first response of a create'),
    delivery_mode: DeliveryMode,
    note: z.string().optional().describe('Why there is no `trigger_url`, and how to get a new one'),
  })
  .meta({ id: 'CapabilityUrl', description: 'The default capability URL of a new agent' });

/** The create response: the AgentSummary's fields at the top level (no `agent.agent`), plus the capability. */
export const CreateAgentResponse = AgentSummary.extend({ ok: okTrue, external_trigger: CapabilityUrl }).meta({
  id: 'CreateAgentResponse',
  description: "The new agent: its AgentSummary's fields, and its default capability URL (shown only in the first response)",
});

/** `trigger_url` is shown once: a replayed response cannot show it again (the token is never stored). */
export const TriggerCreatedResponse = z
  .object({
    ok: okTrue,
    trigger: ExternalTriggerSummary,
    delivery_mode: DeliveryMode,
    trigger_url: z.string().optional(),
  })
  .meta({ id: 'TriggerCreatedResponse', description: 'The new capability: its trigger, and its `trigger_url` (shown only in this response)' });

export const TriggerResponse = ExternalTriggerSummary.extend({ ok: okTrue }).meta({ id: 'TriggerResponse', description: 'The trigger after the operation' });

/** The contract's TaskStatus: the task record plus `task_id` (= `id`). */
export const TaskStatusView = TaskRecord.extend({ task_id: z.string() }).meta({ id: 'TaskStatus', description: 'TaskStatus: the task record plus `task_id`' });
export const TaskStatusResponse = TaskStatusView.extend({ ok: okTrue }).meta({ id: 'TaskStatusResponse', description: 'The task created: its TaskStatus' });
export const TaskInputResponse = TaskInputResult.extend({ ok: okTrue }).meta({ id: 'TaskInputResponse', description: 'The input written to the task' });
export const TaskStopResponse = TaskStopResult.extend({ ok: okTrue }).meta({ id: 'TaskStopResponse', description: 'The task after the stop request' });

export const TransitionResponse = TransitionRecord.extend({ ok: okTrue }).meta({ id: 'TransitionResponse', description: 'The committed TransitionRecord (the same record again for a repeated transition_id)' });
export const SnapshotResponse = Snapshot.extend({ ok: okTrue }).meta({ id: 'SnapshotResponse', description: 'The snapshot taken' });
export const MessageAcceptedResponse = MessageAccepted.extend({ ok: okTrue }).meta({ id: 'MessageAcceptedResponse', description: 'The message, durable in the inbox (accepting never waits for a turn)' });
export const WakeResponse = WakeResult.extend({ ok: okTrue }).meta({ id: 'WakeResponse', description: 'What the wake hint did: triggered, coalesced or ignored' });
export const WorkItemResponse = WorkItemView.extend({ ok: okTrue }).meta({ id: 'WorkItemResponse', description: 'The work item after the operation' });
export const WaitResponse = WaitConditionRecord.extend({ ok: okTrue }).meta({ id: 'WaitResponse', description: 'The wait condition after the operation' });
export const TimerResponse = TimerRecord.extend({ ok: okTrue }).meta({ id: 'TimerResponse', description: 'The timer after the operation' });
export const CallbackResponse = CallbackResult.extend({ ok: okTrue }).meta({ id: 'CallbackResponse', description: 'The delivery: its id and what it did' });
export const AbortRunResponse = z
  .object({ ok: okTrue, agent_id: z.string(), run_id: z.string(), aborted: z.literal(true) })
  .meta({ id: 'AbortRunResponse', description: 'The run aborted; the agent ends stopped' });

export const TurnClaimResponse = TurnClaim.extend({ ok: okTrue, summary: AgentSummary }).meta({
  id: 'TurnClaimResponse',
  description: 'The turn claimed: its run, claim, lease, messages and the agent summary',
});
export const TurnHeartbeatResponse = z
  .object({
    ok: okTrue,
    run_id: z.string(),
    claim_id: z.string(),
    lease_expires_at: z.string(),
    messages: z.array(MessageEnvelope).optional().describe('with take_messages: every message of the run so far, in the order the turn took them (the claim\'s first, then those that joined at safe points)'),
  })
  .meta({ id: 'TurnHeartbeatResponse', description: "The turn's lease, extended (and, with take_messages, its messages)" });
export const TurnCompleteResponse = z
  .object({ ok: okTrue, run_id: z.string(), applied: z.boolean() })
  .meta({ id: 'TurnCompleteResponse', description: 'Whether the actions were applied (at most once per run)' });

function page<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({ items: z.array(item), next_cursor: z.string().nullable() })
    .meta({ id, description: `A page of ${id.replace(/Page$/, '')} items; \`next_cursor\` continues it (null at the end)` });
}
export const AgentListPage = page(AgentListEntry, 'AgentListPage');
export const TransitionPage = page(TransitionRecord, 'TransitionPage');
export const SnapshotPage = page(Snapshot, 'SnapshotPage');
export const WorkItemPage = page(WorkItemView, 'WorkItemPage');
export const TimerPage = page(TimerRecord, 'TimerPage');
export const TaskPage = page(TaskStatusView, 'TaskPage');

export const MachineSummaryView = z
  .object({ name: z.string(), states: z.number().int().nonnegative(), transitions: z.number().int().nonnegative() })
  .meta({ id: 'MachineSummary', description: 'A machine: name, state and transition counts' });
export const MachineList = z.object({ items: z.array(MachineSummaryView) }).meta({ id: 'MachineList', description: 'Every machine of the registry' });
export const MachineDetail = MachineSummaryView.extend({ definition: z.unknown(), mermaid: z.string() }).meta({
  id: 'MachineDetail',
  description: 'The machine definition (XState JSON) and its Mermaid diagram',
});

export const HandshakeResponse = z
  .object({
    ok: okTrue,
    protocol: z.object({ name: z.literal('holon-xstate'), version: z.literal(1) }),
    auth: z.object({ mode: z.enum(['bearer', 'local']), required: z.boolean() }),
    capabilities: z.array(z.string()),
    runtime: z.object({ node_id: z.string(), store: z.string(), started_at: z.string() }),
  })
  .meta({ id: 'Handshake', description: 'Protocol, auth mode, capabilities and runtime identity' });
export const HealthResponse = z.object({ ok: okTrue, uptime_s: z.number() }).meta({ id: 'Health', description: 'The process is alive' });
export const OpenApiDocument = z.record(z.string(), z.unknown()).meta({ id: 'OpenApiDocument', description: 'This OpenAPI 3.1 document' });

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

type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 409 | 413 | 422 | 429 | 500 | 503;

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
