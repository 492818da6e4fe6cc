import type { FastifyReply, FastifyRequest } from 'fastify';
import { CreateTriggerRequest, type TriggerCapability } from '../domain/index.js';
import type { MutationOptions } from '../runtime/api.js';
import { triggerUrl } from './capability-url.js';
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
async function mint(request: FastifyRequest, reply: FastifyReply, create: (options: MutationOptions) => Promise<TriggerCapability>) {
  return mutation(request, reply, async (options) => {
    const capability = await create(options);
    const minted = { ok: true as const, trigger: capability.trigger, delivery_mode: capability.delivery_mode };
    // A replay has no token to show: the record never keeps one.
    return { status: 201, body: capability.token === '' ? minted : { ...minted, trigger_url: triggerUrl(request, capability.delivery_mode, capability.token) } };
  });
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
      mint(request, reply, (options) => runtime.createTrigger(request.params.id, request.body, options)),
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
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.revokeTrigger(request.params.id, request.params.trid, options)) },
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
      mint(request, reply, (options) => runtime.resetCallback(request.params.id, options)),
  );
}
