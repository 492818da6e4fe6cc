import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { AgentAccepts, type InspectionMessage } from '../domain/index.js';
import { redactText } from '../runtime/inspection-json.js';
import { HttpError } from './errors.js';
import { InspectionTickets } from './inspection-tickets.js';
import { relaySocket, socketRoute } from './socket-relay.js';
import { AgentParams, apiErrors, NoQuery } from './schemas.js';
import type { ShutdownTracker } from './shutdown.js';
import type { HttpApp, RouteDeps } from './types.js';

/**
 * The inspection events of one agent's actors in the `@statelyai/inspect` format, on one URL:
 * a WebSocket on upgrade (Stately's own receivers:
 * `createWebSocketReceiver({ server: 'ws://host/api/agents/<id>/inspection' })`) or SSE (for
 * clients that send a bearer header, like the inspector page). Each connection
 * starts with the agent's live actors as they are now; the actors are observed only while at
 * least one connection is open. No replay: a client that falls behind is disconnected and
 * reconnects to a fresh picture.
 */
const tags = ['statecharts'];

/** Messages a slow SSE client may have waiting before it is disconnected. */
const MAX_QUEUED = 10_000;
/** Bytes a slow WebSocket client may have unsent before it is disconnected. */
const MAX_WS_BUFFERED = 8 * 1024 * 1024;

const InspectionStreamResponse = {
  description: 'Server-sent events: `event:` = the inspection type (`@xstate.actor`, `@xstate.event`, `@xstate.snapshot`), `data:` = the StatelyInspectionEvent JSON',
  content: { 'text/event-stream': { schema: z.string() } },
};

export interface InspectionOptions {
  /** Cut out of every message besides the generic redaction (the control token). */
  secrets: readonly string[];
  /** Single-use tickets that open the WebSocket without a bearer header (bearer mode). */
  tickets: InspectionTickets;
  /** This node's id, named on a WebSocket relayed to the agent's holder (a cluster). */
  nodeId: () => string;
}

const INSPECTION_PATH = '/api/agents/:id/inspection';

const InspectionQuery = z
  .object({ ticket: z.string().min(1).max(200).optional().describe('a ticket from POST …/inspection/tickets: opens this stream once, without a bearer header (bearer mode)') })
  .strict();

const TicketResponse = z
  .object({
    ok: z.literal(true),
    ticket: z.string(),
    expires_at: z.string(),
    url: z.string().describe('the WebSocket URL with the ticket, for a client that cannot send Authorization (createWebSocketReceiver)'),
  })
  .meta({ id: 'InspectionTicket', description: 'A single-use ticket that opens the inspection WebSocket once, within 30 s' });

/**
 * The bearer hook's exception: a GET of an agent's inspection stream carrying a ticket minted for
 * that agent. The ticket is spent whatever the outcome.
 */
export function admitsInspectionTicket(tickets: InspectionTickets): (request: FastifyRequest) => boolean {
  return (request) => {
    if (request.method !== 'GET' || request.routeOptions.url !== INSPECTION_PATH) return false;
    const ticket = (request.query as { ticket?: unknown } | undefined)?.ticket;
    const agentId = (request.params as { id?: unknown } | undefined)?.id;
    return typeof ticket === 'string' && typeof agentId === 'string' && tickets.redeem(agentId, ticket);
  };
}

function serialize(message: InspectionMessage, secrets: readonly string[]): string {
  const text = JSON.stringify(message);
  return secrets.length === 0 ? text : redactText(text, secrets);
}

async function streamInspection(
  reply: FastifyReply,
  shutdown: ShutdownTracker,
  log: FastifyBaseLogger,
  subscribe: (listener: (message: InspectionMessage) => void) => Promise<() => void>,
  secrets: readonly string[],
): Promise<void> {
  const queue: InspectionMessage[] = [];
  let overflow = false;
  let wake: (() => void) | null = null;
  // Subscribed first: an agent gone in between is refused with the envelope, before the stream opens.
  const unsubscribe = await subscribe((message) => {
    if (overflow) return;
    queue.push(message);
    if (queue.length > MAX_QUEUED) overflow = true;
    wake?.();
  });
  const sse = reply.sse;
  sse.keepAlive();
  const client = new AbortController();
  sse.onClose(() => client.abort());
  const { signal, release } = shutdown.signal(client.signal);
  const closed = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  try {
    sse.sendHeaders(200);
    // The head goes out at once, also for an agent that is asleep (nothing to send yet).
    reply.raw.flushHeaders();
    while (!signal.aborted && !overflow) {
      const next = queue.shift();
      if (next === undefined) {
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), closed]);
        wake = null;
        continue;
      }
      // An awaited write can hang on a socket that closes without an error (fastify/sse#54): race it.
      await Promise.race([sse.send({ event: next.type, data: serialize(next, secrets) }), closed]);
    }
    if (overflow) log.info('inspection SSE client lagging: stream closed');
  } catch (error) {
    if (!signal.aborted) log.warn({ err: error }, 'inspection stream ended by an error');
  } finally {
    unsubscribe();
    release();
    sse.close();
  }
}

async function socketInspection(
  socket: WebSocket,
  shutdown: ShutdownTracker,
  log: FastifyBaseLogger,
  subscribe: (listener: (message: InspectionMessage) => void) => Promise<() => void>,
  secrets: readonly string[],
): Promise<void> {
  let unsubscribe: (() => void) | null = null;
  let closed = false;
  const close = (code: number, reason: string): void => {
    if (closed) return;
    closed = true;
    unsubscribe?.();
    socket.close(code, reason);
  };
  const untrack = shutdown.track(() => close(1001, 'server shutting down'));
  socket.on('close', () => {
    closed = true;
    unsubscribe?.();
    untrack();
  });
  // Inspection is one-way; whatever a client sends is ignored.
  socket.on('message', () => undefined);
  try {
    const stop = await subscribe((message) => {
      if (closed) return;
      if (socket.bufferedAmount > MAX_WS_BUFFERED) {
        log.info('inspection WebSocket client lagging: closed');
        close(1013, 'lagging: reconnect');
        return;
      }
      socket.send(serialize(message, secrets));
    });
    if (closed) stop();
    else unsubscribe = stop;
  } catch (error) {
    log.warn({ err: error }, 'inspection WebSocket could not start');
    close(1011, 'inspection failed');
  }
}

export function registerInspectionRoutes(app: HttpApp, { runtime, shutdown }: RouteDeps, options: InspectionOptions): void {
  // Both routes refuse an unknown agent (404) before the stream or the upgrade.
  // A WebSocket for an agent another node holds is relayed there (`socket-relay.ts`), which checks.
  const agentExists = async (request: FastifyRequest): Promise<void> => {
    const agentId = (request.params as { id: string }).id;
    if (request.headers.upgrade !== undefined && (await socketRoute(runtime, agentId, request)).kind !== 'local') return;
    await runtime.getSummary(agentId);
  };

  // One URL, two transports: a WebSocket upgrade (Stately's receivers), or SSE for a client that
  // asks for text/event-stream (and can send a bearer header, like the inspector page).
  app.route({
    method: 'GET',
    url: INSPECTION_PATH,
    // Messages are serialised (and the secrets cut out) before they are sent.
    sse: { kind: 'dual', serializer: String },
    preHandler: agentExists,
    schema: {
      tags,
      operationId: 'streamAgentInspection',
      summary:
        "The inspection events of the agent's actors (@statelyai/inspect format), starting with the live actors as they are now: a WebSocket on upgrade (e.g. createWebSocketReceiver), else SSE (Accept: text/event-stream)",
      params: AgentParams,
      querystring: InspectionQuery,
      response: { 200: InspectionStreamResponse, ...apiErrors(404, 406) },
    },
    wsHandler: (socket, request) => {
      const agentId = request.params.id;
      void socketRoute(runtime, agentId, request).then(
        (where) => {
          if (where.kind === 'forward') relaySocket(socket, request, { url: where.url, nodeId: options.nodeId(), maxBuffered: MAX_WS_BUFFERED, shutdown, log: request.log });
          else if (where.kind === 'unavailable') socket.close(1013, `holder ${where.holder} unreachable; retry`.slice(0, 120));
          else void socketInspection(socket, shutdown, request.log, (listener) => runtime.inspect(agentId, listener), options.secrets);
        },
        (error: unknown) => {
          request.log.warn({ err: error }, 'inspection WebSocket: where the agent is served is unknown');
          socket.close(1011, 'inspection failed');
        },
      );
    },
    handler: async (request, reply) => {
      if (!reply.sse) throw new HttpError(406, 'not_acceptable', 'open a WebSocket, or accept text/event-stream');
      await streamInspection(reply, shutdown, request.log, (listener) => runtime.inspect(request.params.id, listener), options.secrets);
    },
  });

  app.post(
    '/api/agents/:id/inspection/tickets',
    {
      schema: {
        tags,
        operationId: 'createInspectionTicket',
        summary: "A single-use ticket for the agent's inspection WebSocket (30 s), for clients that cannot send a bearer header",
        params: AgentParams,
        querystring: NoQuery,
        response: { 201: TicketResponse, ...apiErrors(404) },
      },
    },
    async (request, reply) => {
      const agentId = request.params.id;
      await runtime.getSummary(agentId);
      const { ticket, expires_at } = options.tickets.issue(agentId);
      const origin = `${request.protocol === 'https' ? 'wss' : 'ws'}://${request.host}`;
      reply.code(201);
      return { ok: true as const, ticket, expires_at, url: `${origin}/api/agents/${encodeURIComponent(agentId)}/inspection?ticket=${ticket}` };
    },
  );

  app.get(
    '/api/inspector/agents/:id/accepts',
    {
      schema: {
        tags,
        operationId: 'getAcceptedEventsForInspector',
        summary: 'The events each of the agent\'s actors accepts in its current state, read from the machines (guards named, `enabled` = can())',
        params: AgentParams,
        querystring: NoQuery,
        response: { 200: AgentAccepts, ...apiErrors(404) },
      },
    },
    async (request) => runtime.acceptedEvents(request.params.id),
  );
}
