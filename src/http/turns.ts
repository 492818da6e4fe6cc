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
import type { TurnRelay } from './turn-relay.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['turn workers'];
/** How long a cluster node's claim waits for a local offer before it asks the other nodes again. */
const CLAIM_SLICE_MS = 500;

export function registerTurnRoutes(app: HttpApp, { runtime, shutdown }: RouteDeps, relay?: TurnRelay): void {
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
        const body = request.body ?? { wait_ms: 0 };
        let offer: Awaited<ReturnType<typeof runtime.claimTurn>> = null;
        if (relay?.asksPeers(request.headers)) {
          // A cluster node: its own offers for a slice, then the other nodes', until wait_ms runs out.
          const deadline = Date.now() + body.wait_ms;
          for (;;) {
            const slice = Math.max(0, Math.min(deadline - Date.now(), CLAIM_SLICE_MS));
            offer = await runtime.claimTurn({ ...body, wait_ms: slice }, signal, idempotency ? { idempotency } : {});
            if (offer !== null || signal.aborted) break;
            const elsewhere = await relay.claimElsewhere(body, request.headers, signal);
            if (elsewhere !== null) {
              if (elsewhere.replayed) reply.header('Idempotent-Replay', 'true');
              return elsewhere.body;
            }
            if (Date.now() >= deadline) break;
          }
        } else {
          offer = await runtime.claimTurn(body, signal, idempotency ? { idempotency } : {});
        }
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
