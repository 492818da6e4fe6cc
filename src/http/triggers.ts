import type { FastifyReply, FastifyRequest } from 'fastify';
import { CreateTriggerRequest, type TriggerCapability } from '../domain/index.js';
import type { RuntimeApi } from '../runtime/api.js';
import { triggerUrl } from './capability-url.js';
import { assertVersion, ifMatchVersion } from './concurrency.js';
import { runIdempotently } from './idempotency.js';
import { mutation } from './mutation.js';
import {
  AgentParams,
  apiErrors,
  EmptyBody,
  MutationHeaders,
  NoQuery,
  TriggerCreatedResponse,
  TriggerParams,
  TriggerResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['external triggers'];

/**
 * Mints a capability and shows its URL once. What the idempotency store keeps has no token (the
 * raw token is never stored), so a replayed answer carries the trigger but no `trigger_url`.
 */
async function mint(
  runtime: RuntimeApi,
  request: FastifyRequest,
  reply: FastifyReply,
  agentId: string,
  create: () => Promise<TriggerCapability>,
) {
  const expected = ifMatchVersion(request);
  let url: string | undefined;
  const { value, replayed } = await runIdempotently(runtime, request, async () => {
    await assertVersion(runtime, agentId, expected);
    const capability = await create();
    url = triggerUrl(request, capability.delivery_mode, capability.token);
    return { ok: true as const, trigger: capability.trigger, delivery_mode: capability.delivery_mode };
  });
  if (replayed) reply.header('Idempotent-Replay', 'true');
  reply.code(201);
  return url === undefined || replayed ? value : { ...value, trigger_url: url };
}

export function registerTriggerRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/triggers',
    {
      schema: {
        tags,
        operationId: 'createTrigger',
        summary: 'Create a capability URL (trigger_url is shown only in this response)',
        params: AgentParams,
        headers: MutationHeaders,
        body: CreateTriggerRequest,
        querystring: NoQuery,
        response: { 201: TriggerCreatedResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mint(runtime, request, reply, request.params.id, () => runtime.createTrigger(request.params.id, request.body)),
  );

  app.post(
    '/api/control/agents/:id/triggers/:trid/revoke',
    {
      schema: {
        tags,
        operationId: 'revokeTrigger',
        summary: 'Revoke a capability; its URL answers 403 afterwards',
        params: TriggerParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 200: TriggerResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(runtime, request, reply, request.params.id, async () => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.revokeTrigger(request.params.id, request.params.trid)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/reset-callback',
    {
      schema: {
        tags,
        operationId: 'resetCallback',
        summary: 'Rotate the default capability: the old URL stops working, the new one is shown once',
        params: AgentParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 201: TriggerCreatedResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mint(runtime, request, reply, request.params.id, () => runtime.resetCallback(request.params.id)),
  );
}
