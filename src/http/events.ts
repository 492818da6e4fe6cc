import type { z } from 'zod';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, EventsQuery, type AgentEvent, type EventsPage } from '../domain/index.js';
import { HttpError } from './errors.js';
import { cursorInWindow, relayAgentEvents, relayLiveEvents, type RelayEnd } from './event-relay.js';
import { AgentParams, apiErrors, EventsPageView, EventStreamResponse, NoQuery, StreamHeaders, StreamQuery } from './schemas.js';
import type { ShutdownTracker } from './shutdown.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['events'];

type Send = (event: AgentEvent) => Promise<void>;

const SPECIFICITY: Readonly<Record<string, number>> = { 'text/event-stream': 3, 'text/*': 2, '*/*': 1 };

/**
 * Refuses clients that do not accept `text/event-stream` with the envelope (406) before the SSE
 * plugin's own gate would answer in its own shape. A missing Accept header admits SSE.
 */
export async function requireEventStream(request: FastifyRequest): Promise<void> {
  const accept = request.headers.accept;
  if (accept === undefined || accept.trim() === '') return;
  // The most specific matching range decides (RFC 9110 §12.5.1), as in @fastify/sse's own gate.
  let best = 0;
  let bestRefused = false;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const specificity = SPECIFICITY[type] ?? 0;
    if (specificity <= best) continue;
    best = specificity;
    bestRefused = params.some((param) => /^q=0(?:\.0{0,3})?$/.test(param));
  }
  const admits = best > 0 && !bestRefused;
  if (!admits) throw new HttpError(406, 'not_acceptable', 'this route only produces text/event-stream');
}

/** `Last-Event-ID` (a reconnecting EventSource) wins over `after_seq`; neither = live tail. */
function resumeCursor(request: FastifyRequest, afterSeq: number | undefined): number | null {
  const header = request.headers['last-event-id'];
  if (header !== undefined) {
    if (typeof header !== 'string' || !/^\d{1,15}$/.test(header.trim())) {
      throw new DomainError('invalid_request', 'Last-Event-ID must be an event_seq', {
        issues: [{ path: 'headers/last-event-id', code: 'invalid_format', message: 'expected a non-negative integer' }],
      });
    }
    return Number(header.trim());
  }
  return afterSeq ?? null;
}

/**
 * Runs `relay` on an open SSE response until the client leaves, the relay gives up, or the server
 * shuts down (the shutdown tracker's `preClose` abort), then ends the response.
 */
async function streamEvents(
  reply: FastifyReply,
  shutdown: ShutdownTracker,
  log: FastifyBaseLogger,
  relay: (send: Send, signal: AbortSignal, open: () => void) => Promise<RelayEnd>,
): Promise<void> {
  const sse = reply.sse;
  sse.keepAlive();
  const client = new AbortController();
  sse.onClose(() => client.abort());
  const { signal, release } = shutdown.signal(client.signal);
  const closed = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  let opened = false;
  // The relay opens the stream once it receives what it relays (at once for one agent's, which
  // replays by cursor; the global stream once every node's commits reach it).
  const open = (): void => {
    if (opened) return;
    opened = true;
    sse.sendHeaders(200);
    // Node holds a written head until the first body write: send it now, so a client sees the
    // stream open at once and not at the first event or heartbeat (15 s on an idle agent).
    reply.raw.flushHeaders();
  };
  // An awaited write can hang on a socket that closes without an error (fastify/sse#54): race it.
  const send: Send = async (event) => {
    if (signal.aborted) return;
    await Promise.race([sse.send({ id: String(event.event_seq), event: event.type, data: event }), closed]);
  };
  try {
    const end = await relay(send, signal, open);
    if (end === 'lagging') log.info('SSE client lagging: stream closed, the client resumes by Last-Event-ID');
  } catch (error) {
    if (!signal.aborted) log.warn({ err: error }, 'SSE stream ended by an error');
  } finally {
    open();
    release();
    sse.close();
  }
}

/**
 * The page as the wire types it. Every stored event was emitted through `Tx.emit`, whose payload
 * is typed by EVENT_PAYLOADS, so the envelope's events are the typed union's; the response
 * serializer checks each one against it again.
 */
function typedPage(page: EventsPage): z.input<typeof EventsPageView> {
  return page as z.input<typeof EventsPageView>;
}

/** The head of an SSE response, for HEAD requests. */
function streamHead(reply: FastifyReply): FastifyReply {
  return reply.code(200).header('content-type', 'text/event-stream').header('cache-control', 'no-cache').send();
}

export function registerEventRoutes(app: HttpApp, { runtime, shutdown }: RouteDeps): void {
  /** The resume cursor of a stream request, refused (404 cursor_not_found) outside the retained window. */
  const checkedCursor = async (request: FastifyRequest, agentId: string, afterSeq: number | undefined): Promise<number | null> => {
    const after = resumeCursor(request, afterSeq);
    const window = await runtime.eventsPage(agentId, { limit: 1, order: 'asc' });
    if (after !== null && !cursorInWindow(after, window)) {
      throw new DomainError('cursor_not_found', `after_seq ${after} is outside the retained window`, {
        after_seq: after,
        oldest_seq: window.oldest_seq,
        newest_seq: window.newest_seq,
      });
    }
    return after;
  };

  app.get(
    '/api/agents/:id/events',
    {
      schema: {
        tags,
        operationId: 'listEvents',
        summary: 'A page of the durable event log (after_seq / before_seq exclusive)',
        params: AgentParams,
        querystring: EventsQuery,
        response: { 200: EventsPageView, ...apiErrors(404) },
      },
    },
    async (request) => typedPage(await runtime.eventsPage(request.params.id, request.query)),
  );

  app.get(
    '/api/agents/:id/events/stream',
    {
      sse: 'only',
      exposeHeadRoute: false,
      onRequest: requireEventStream,
      schema: {
        tags,
        operationId: 'streamAgentEvents',
        summary: 'SSE of one agent; resumes after Last-Event-ID or after_seq with no gap and no duplicate',
        params: AgentParams,
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: { 200: EventStreamResponse, ...apiErrors(404, 406) },
      },
    },
    async (request, reply) => {
      const agentId = request.params.id;
      const after = await checkedCursor(request, agentId, request.query.after_seq);
      await streamEvents(reply, shutdown, request.log, (send, signal, open) => {
        open();
        return relayAgentEvents({ source: runtime, agentId, after, send, signal });
      });
    },
  );

  // HEAD answers what GET would (the same refusals, or the stream's headers) without opening it.
  app.head(
    '/api/agents/:id/events/stream',
    { onRequest: requireEventStream, schema: { params: AgentParams, querystring: StreamQuery, headers: StreamHeaders } },
    async (request, reply) => {
      await checkedCursor(request, request.params.id, request.query.after_seq);
      return streamHead(reply);
    },
  );

  app.head('/api/events/stream', { onRequest: requireEventStream, schema: { querystring: NoQuery } }, async (_request, reply) =>
    streamHead(reply),
  );

  app.get(
    '/api/events/stream',
    {
      sse: 'only',
      exposeHeadRoute: false,
      onRequest: requireEventStream,
      schema: {
        tags,
        operationId: 'streamAllEvents',
        summary: 'Live SSE across all agents; no replay',
        querystring: NoQuery,
        response: { 200: EventStreamResponse, ...apiErrors(406) },
      },
    },
    async (request, reply) => {
      await streamEvents(reply, shutdown, request.log, (send, signal, open) =>
        relayLiveEvents({ source: runtime, send, signal, subscribed: open }),
      );
    },
  );
}
