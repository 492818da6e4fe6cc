import { z } from 'zod';
import { ClaimTurnRequest, CompleteTurnRequest, HeartbeatTurnRequest } from '../domain/index.js';
import { idempotencyReceipt } from './idempotency.js';
import { mutation } from './mutation.js';
import {
  apiErrors,
  IdempotencyHeaders,
  NoQuery,
  RunParams,
  TurnClaimResponse,
  TurnCompleteResponse,
  TurnHeartbeatResponse,
} from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['turn workers'];

export function registerTurnRoutes(app: HttpApp, { runtime, shutdown }: RouteDeps): void {
  app.post(
    '/api/control/turns/claim',
    {
      schema: {
        tags,
        operationId: 'claimTurn',
        summary: 'Long-poll for a turn of an http_worker agent; 204 when none is offered within wait_ms',
        body: ClaimTurnRequest.nullish(),
        querystring: NoQuery,
        response: { 200: TurnClaimResponse, 204: z.null().describe('no turn available'), ...apiErrors() },
      },
    },
    async (request, reply) => {
      // The poll ends early when the client goes away or the server shuts down.
      const client = new AbortController();
      const onClose = (): void => {
        if (!reply.raw.writableFinished) client.abort();
      };
      reply.raw.once('close', onClose);
      const { signal, release } = shutdown.signal(client.signal);
      try {
        const idempotency = idempotencyReceipt(request);
        const offer = await runtime.claimTurn(request.body ?? { wait_ms: 0 }, signal, idempotency ? { idempotency } : {});
        if (offer === null) return reply.code(204).send(null);
        if (idempotency?.replayed) reply.header('Idempotent-Replay', 'true');
        const summary = await runtime.getSummary(offer.agent_id);
        return { ok: true as const, ...offer, summary };
      } finally {
        release();
        reply.raw.off('close', onClose);
      }
    },
  );

  app.post(
    '/api/control/turns/:run_id/heartbeat',
    {
      schema: {
        tags,
        operationId: 'heartbeatTurn',
        summary: 'Extend the turn lease of claim_id; 409 lease_lost once it expired or the turn was offered again',
        params: RunParams,
        body: HeartbeatTurnRequest,
        querystring: NoQuery,
        response: { 200: TurnHeartbeatResponse, ...apiErrors(404, 409) },
      },
    },
    async (request) => ({ ok: true as const, ...(await runtime.heartbeatTurn(request.params.run_id, request.body)) }),
  );

  app.post(
    '/api/control/turns/:run_id/complete',
    {
      schema: {
        tags,
        operationId: 'completeTurn',
        summary: "Apply the turn's actions as one committed transition (at most once); claim_id must still hold the turn",
        params: RunParams,
        headers: IdempotencyHeaders,
        body: CompleteTurnRequest,
        querystring: NoQuery,
        response: { 200: TurnCompleteResponse, ...apiErrors(404, 409) },
      },
    },
    async (request, reply) =>
      mutation(request, reply, async (options) => ({
        status: 200,
        body: { ok: true as const, ...(await runtime.completeTurn(request.params.run_id, request.body, options)) },
      })),
  );
}
