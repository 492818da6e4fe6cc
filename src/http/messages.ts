import type { FastifyRequest } from 'fastify';
import { DomainError, EnqueueRequest, PromptRequest, WakeRequest } from '../domain/index.js';
import { mutation } from './mutation.js';
import {
  AgentParams,
  apiErrors,
  MessageAcceptedResponse,
  MutationHeaders,
  NoQuery,
  WakeResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['messages'];

const PUBLIC_KINDS: ReadonlySet<string> = new Set(['channel_event', 'webhook_event']);
const ORIGIN_OF_KIND: Readonly<Record<string, string>> = { channel_event: 'channel', webhook_event: 'webhook' };

function forbidden(message: string): DomainError {
  return new DomainError('forbidden', message);
}

/**
 * Public ingress may not claim runtime authority. Runs as `preValidation` on the raw body, so a
 * forbidden field is a 403 even where the strict schema would have answered 400.
 */
export async function enqueuePolicy(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const fields = body as Record<string, unknown>;
  if (Object.hasOwn(fields, 'authority_class')) throw forbidden('authority_class is assigned by the runtime, not the caller');
  const kind = fields['kind'];
  if (typeof kind === 'string' && !PUBLIC_KINDS.has(kind)) {
    throw forbidden('public ingress accepts only channel_event and webhook_event');
  }
  if (fields['priority'] === 'interject') throw forbidden('the interject lane is reserved for operator input');
  const origin = fields['origin'];
  if (origin !== null && typeof origin === 'object' && !Array.isArray(origin)) {
    const originKind = (origin as Record<string, unknown>)['kind'];
    if (typeof originKind === 'string') {
      if (originKind !== 'channel' && originKind !== 'webhook') {
        throw forbidden('public ingress accepts only channel and webhook origins');
      }
      // An omitted kind defaults to webhook_event (EnqueueRequest).
      const effectiveKind = typeof kind === 'string' ? kind : kind === undefined ? 'webhook_event' : null;
      if (effectiveKind !== null && ORIGIN_OF_KIND[effectiveKind] !== originKind) {
        throw forbidden('the origin does not match the message kind');
      }
    }
  }
}

export function registerMessageRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/prompt',
    {
      schema: {
        tags,
        operationId: 'promptAgent',
        summary: 'Operator input (priority interject); a stopped agent answers 409 agent_stopped',
        params: AgentParams,
        headers: MutationHeaders,
        body: PromptRequest,
        querystring: NoQuery,
        response: { 200: MessageAcceptedResponse, ...apiErrors(404, 409, 429) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.prompt(request.params.id, request.body, options)) },
      })),
  );

  app.post(
    '/api/agents/:id/enqueue',
    {
      preValidation: enqueuePolicy,
      schema: {
        tags,
        operationId: 'enqueueMessage',
        summary: 'Public ingress: channel/webhook events only; runtime-owned kinds, interject or authority_class → 403',
        params: AgentParams,
        headers: MutationHeaders,
        body: EnqueueRequest,
        querystring: NoQuery,
        response: { 200: MessageAcceptedResponse, ...apiErrors(403, 404, 409, 429) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.enqueue(request.params.id, request.body, options)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/wake',
    {
      schema: {
        tags,
        operationId: 'wakeAgent',
        summary: 'Wake hint → triggered | coalesced | ignored',
        params: AgentParams,
        headers: MutationHeaders,
        body: WakeRequest,
        querystring: NoQuery,
        response: { 200: WakeResponse, ...apiErrors(404, 409, 429) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.wake(request.params.id, request.body, options)) },
      })),
  );
}
