import { CreateWaitRequest } from '../domain/index.js';
import { mutation } from './mutation.js';
import {
  AgentParams,
  apiErrors,
  EmptyBody,
  MutationHeaders,
  NoQuery,
  WaitParams,
  WaitResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['waits'];

export function registerWaitRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  app.post(
    '/api/control/agents/:id/waits',
    {
      schema: {
        tags,
        operationId: 'createWait',
        summary: "WaitFor from outside a turn; replaces the owner's previous wait",
        params: AgentParams,
        headers: MutationHeaders,
        body: CreateWaitRequest,
        querystring: NoQuery,
        response: { 201: WaitResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 201,
        body: { ok: true as const, ...(await runtime.createWait(request.params.id, request.body, options)) },
      })),
  );

  app.post(
    '/api/control/agents/:id/waits/:wait_id/cancel',
    {
      schema: {
        tags,
        operationId: 'cancelWait',
        summary: 'Cancel a wait',
        params: WaitParams,
        headers: MutationHeaders,
        body: EmptyBody,
        querystring: NoQuery,
        response: { 200: WaitResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.cancelWait(request.params.id, request.params.wait_id, options)) },
      })),
  );
}
