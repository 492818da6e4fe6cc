import {
  AbortRunRequest,
  AgentListQuery,
  StateAccepts,
  AgentStateView,
  AgentSummary,
  ControlRequest,
  CreateAgentRequest,
  Snapshot,
  TransitionRequest,
} from '../domain/index.js';
import { triggerUrl } from './capability-url.js';
import { ifMatchIntoBody } from './concurrency.js';
import { idempotencyKey } from './idempotency.js';
import { mutation } from './mutation.js';
import { ListQuery, pageOf } from './paging.js';
import {
  AbortRunResponse,
  AgentListPage,
  AgentParams,
  AgentResponse,
  apiErrors,
  CreateAgentResponse,
  EmptyBody,
  IdempotencyHeaders,
  MutationHeaders,
  NoQuery,
  SnapshotPage,
  SnapshotParams,
  SnapshotResponse,
  TransitionPage,
  TransitionResponse,
  TransitionsQuery,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['agents'];

const resetCallbackPath = (agentId: string): string => `POST /api/control/agents/${encodeURIComponent(agentId)}/reset-callback`;

/** A replayed create cannot show the capability URL again: only its hash was stored. */
function urlShownOnce(agentId: string): string {
  return `the capability URL is shown only once, in the first response to this create; ${resetCallbackPath(agentId)} issues a new one (the old one stops working)`;
}

/** After Start: Stop revoked the agent's capability URLs and Start does not give new ones. */
function afterStartHint(agent: AgentSummary): string | undefined {
  if (agent.active_external_triggers.length > 0) return undefined;
  return `the agent has no active capability URL (Stop revoked them; Start does not restore them): ${resetCallbackPath(agent.identity.agent_id)} for a new default trigger_url, shown once`;
}

export function registerAgentRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents',
    {
      schema: {
        tags,
        operationId: 'createAgent',
        summary: 'Create an agent (Created → Initializing → Active) with its default external trigger',
        headers: IdempotencyHeaders,
        body: CreateAgentRequest,
        querystring: NoQuery,
        response: { 201: CreateAgentResponse, ...apiErrors(409) },
      },
    },
    async (request, reply) => {
      const key = idempotencyKey(request);
      const created = await runtime.createAgent(request.body, key === undefined ? undefined : { idempotency_key: key });
      if (created.replayed) reply.header('Idempotent-Replay', 'true');
      const capability = created.external_trigger;
      const agentId = created.agent.identity.agent_id;
      return reply.code(201).send({
        ok: true as const,
        ...created.agent,
        external_trigger:
          capability.token === ''
            ? { delivery_mode: capability.delivery_mode, note: urlShownOnce(agentId) }
            : { trigger_url: triggerUrl(request, capability.delivery_mode, capability.token), delivery_mode: capability.delivery_mode },
      });
    },
  );

  app.get(
    '/api/agents/list',
    {
      schema: {
        tags,
        operationId: 'listAgents',
        summary: 'The agent roster, paged; `q` keeps ids containing it (any case), `status` one AgentStatus',
        querystring: AgentListQuery,
        response: { 200: AgentListPage, ...apiErrors() },
      },
    },
    async (request) => runtime.listAgents(request.query),
  );

  app.get(
    '/api/agents/:id/status',
    {
      schema: {
        tags,
        operationId: 'getAgentSummary',
        summary: 'The AgentSummary',
        params: AgentParams,
        querystring: NoQuery,
        response: { 200: AgentSummary, ...apiErrors(404) },
      },
    },
    async (request) => runtime.getSummary(request.params.id),
  );

  app.get(
    '/api/agents/:id/state',
    {
      schema: {
        tags,
        operationId: 'getAgentState',
        summary: 'Bounded bootstrap: summary, queue, tasks, timers, work items, waits, triggers',
        params: AgentParams,
        querystring: NoQuery,
        response: { 200: AgentStateView, ...apiErrors(404) },
      },
    },
    async (request) => runtime.getState(request.params.id),
  );

  app.get(
    '/api/agents/:id/accepts',
    {
      schema: {
        tags,
        operationId: 'getAgentAccepts',
        summary: "The public events the agent's current state accepts (snapshot.can), each with the requests that send it and their body schemas",
        params: AgentParams,
        querystring: NoQuery,
        response: { 200: StateAccepts, ...apiErrors(404) },
      },
    },
    async (request) => runtime.accepts(request.params.id),
  );

  app.post(
    '/api/control/agents/:id/control',
    {
      preValidation: ifMatchIntoBody,
      schema: {
        tags,
        operationId: 'controlAgent',
        summary: 'Start (hand to the scheduler) or stop the agent',
        params: AgentParams,
        headers: MutationHeaders,
        body: ControlRequest,
        querystring: NoQuery,
        response: { 200: AgentResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => {
        const agent = await runtime.control(request.params.id, request.body, options);
        const hint = request.body.action === 'start' ? afterStartHint(agent) : undefined;
        return { status: 200, body: { ok: true as const, agent, ...(hint === undefined ? {} : { hint }) } };
      }),
  );

  app.post(
    '/api/control/agents/:id/transitions',
    {
      preValidation: ifMatchIntoBody,
      schema: {
        tags,
        operationId: 'requestTransition',
        summary: 'Request a lifecycle transition (seed-002 protocol); the same transition_id commits once',
        params: AgentParams,
        headers: MutationHeaders,
        body: TransitionRequest,
        querystring: NoQuery,
        response: { 201: TransitionResponse, ...apiErrors(404, 409, 422) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => {
        const { record, replayed } = await runtime.transition(request.params.id, request.body, options);
        if (replayed) reply.header('Idempotent-Replay', 'true');
        return { status: 201, body: { ok: true as const, ...record } };
      }),
  );

  app.get(
    '/api/agents/:id/transitions',
    {
      schema: {
        tags,
        operationId: 'listTransitions',
        summary: 'The reason chain: TransitionRecords in commit order',
        params: AgentParams,
        querystring: TransitionsQuery,
        response: { 200: TransitionPage, ...apiErrors(404) },
      },
    },
    async (request) => {
      const items = await runtime.listTransitions(request.params.id, request.query);
      const last = items[items.length - 1];
      return { items, next_cursor: items.length === request.query.limit && last ? String(last.seq) : null };
    },
  );

  app.post(
    '/api/control/agents/:id/snapshots',
    {
      schema: {
        tags,
        operationId: 'takeSnapshot',
        summary: 'Take a recovery snapshot',
        params: AgentParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 201: SnapshotResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...(await runtime.takeSnapshot(request.params.id, options)) },
      })),
  );

  app.get(
    '/api/agents/:id/snapshots',
    {
      schema: {
        tags,
        operationId: 'listSnapshots',
        summary: 'Recovery snapshots',
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: SnapshotPage, ...apiErrors(404) },
      },
    },
    async (request) => pageOf(await runtime.listSnapshots(request.params.id), request.query),
  );

  app.get(
    '/api/agents/:id/snapshots/:sid',
    {
      schema: {
        tags,
        operationId: 'getSnapshot',
        summary: 'One recovery snapshot',
        params: SnapshotParams,
        querystring: NoQuery,
        response: { 200: Snapshot, ...apiErrors(404) },
      },
    },
    async (request) => runtime.getSnapshot(request.params.id, request.params.sid),
  );

  app.post(
    '/api/control/agents/:id/current-run/abort',
    {
      schema: {
        tags,
        operationId: 'abortCurrentRun',
        summary: 'Abort the current run; the agent ends stopped',
        params: AgentParams,
        headers: MutationHeaders,
        body: AbortRunRequest.nullish(),
        querystring: NoQuery,
        response: { 200: AbortRunResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.abortRun(request.params.id, request.body ?? {}, options)) },
      })),
  );

  app.delete(
    '/api/control/agents/:id',
    {
      schema: {
        tags,
        operationId: 'terminateAgent',
        summary: 'Terminate the agent (Terminating → Terminated); idempotent',
        params: AgentParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 200: AgentResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, agent: await runtime.terminate(request.params.id, options) },
      })),
  );
}
