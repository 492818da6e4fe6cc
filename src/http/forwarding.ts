import { Readable } from 'node:stream';
import type { ReadableStream as WebStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { agentOfRunId, DomainError } from '../domain/index.js';
import type { AgentRoute, RuntimeApi } from '../runtime/api.js';
import type { HttpApp } from './types.js';

import { FORWARDED_BY, FORWARDED_HOST, FORWARDED_PROTO } from './forwarded-headers.js';

/** The routes of one agent: `:id` names it. */
const AGENT_ROUTE = /^\/api\/(agents|control\/agents|inspector\/agents)\/:id(\/|$)/;
/** CreateAgent: the body's `agent_id`, or the agent an earlier create with the same Idempotency-Key created. */
const CREATE_ROUTE = '/api/control/agents';
/** The capability routes: the token names the agent. */
const CALLBACK_ROUTE = /^\/callbacks\/(wake|enqueue)\/:token$/;
/** A turn worker's heartbeat and complete: the run id names its agent (`agentOfRunId`), so any node routes them. */
const TURN_RUN_ROUTE = /^\/api\/control\/turns\/:run_id\/(heartbeat|complete)$/;

/** Request headers a forwarded request carries as they came (the owner authenticates the caller again). */
const FORWARDED_HEADERS = ['authorization', 'content-type', 'accept', 'idempotency-key', 'if-match', 'last-event-id', 'x-request-id'] as const;
/** Response headers that belong to one hop, not to the answer. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'proxy-connection', 'te', 'trailer']);

/**
 * Any node serves any agent (docs/cluster-design.md step 6): before validation, a request on an
 * agent's routes or a capability URL asks the runtime where the agent is served. Here when this
 * node holds its lease or can take it; otherwise it is proxied as it came (method, path and query,
 * body, the caller's headers) to the holder's advertised address with `X-Holon-Forwarded-By`, and
 * its answer (an SSE stream as a stream) is relayed. A forwarded request is never forwarded again,
 * and a holder that is live but not reachable answers 503 `store_unavailable` (retryable): its
 * lease expires, and the next request takes the agent over. WebSocket upgrades are served here.
 */
export function registerForwarding(app: HttpApp, runtime: RuntimeApi, nodeId: () => string): void {
  const route = runtime.route?.bind(runtime);
  if (!route || runtime.clustered !== true) return;
  app.addHook('preValidation', async (request, reply) => {
    if (request.headers.upgrade !== undefined) return;
    const target = await targetOf(runtime, route, request);
    if (target === null) return;
    const where = await target.locate();
    if (where.kind === 'local') return;
    if (where.kind === 'unavailable' || request.headers[FORWARDED_BY] !== undefined) {
      throw new DomainError('store_unavailable', `agent ${target.agentId} is held by node ${where.holder}, which cannot be reached from this node now; retry`, { agent_id: target.agentId, holder: where.holder });
    }
    // Until the holder answers, its lease is watched: a holder that stopped (paused, its lease run
    // out) loses the agent to this node, and the request is served here instead.
    const moved = new AbortController();
    let watching = true;
    const watch = async (): Promise<void> => {
      while (watching) {
        await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
        if (!watching) return;
        const now = await target.locate().catch(() => where);
        if (now.kind === 'local' || now.holder !== where.holder) {
          moved.abort(now);
          return;
        }
      }
    };
    void watch();
    try {
      const outcome = await proxy(request, reply, where.url, nodeId(), moved.signal);
      if (outcome === 'moved') {
        const now = moved.signal.reason as AgentRoute;
        if (now.kind === 'local') return;
        throw new DomainError('store_unavailable', `agent ${target.agentId} moved to node ${now.holder} while this request waited; retry`, { agent_id: target.agentId, holder: now.holder });
      }
      return reply;
    } finally {
      watching = false;
    }
  });
}

/** The agent a request is for (as shown in an error) and how to find where it is served; `null`: not an agent's request. */
async function targetOf(runtime: RuntimeApi, route: (agentId: string) => Promise<AgentRoute>, request: FastifyRequest): Promise<{ agentId: string; locate: () => Promise<AgentRoute> } | null> {
  const pattern = request.routeOptions.url ?? '';
  const routeCreate = runtime.routeCreate?.bind(runtime);
  if (pattern === CREATE_ROUTE && request.method === 'POST' && routeCreate) {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const named = typeof body['agent_id'] === 'string' ? body['agent_id'] : undefined;
    const header = request.headers['idempotency-key'];
    const key = typeof header === 'string' ? header : undefined;
    if (named === undefined && key === undefined) return null;
    return { agentId: named ?? 'named by the Idempotency-Key', locate: () => routeCreate(named, key) };
  }
  const given = (request.params ?? {}) as Record<string, unknown>;
  if (TURN_RUN_ROUTE.test(pattern) && typeof given['run_id'] === 'string') {
    const agentId = agentOfRunId(given['run_id']);
    return agentId === undefined ? null : { agentId, locate: () => route(agentId) };
  }
  const agentId = await agentOf(runtime, pattern, request.params);
  return agentId === null ? null : { agentId, locate: () => route(agentId) };
}

async function agentOf(runtime: RuntimeApi, pattern: string, params: unknown): Promise<string | null> {
  const given = (params ?? {}) as Record<string, unknown>;
  if (AGENT_ROUTE.test(pattern)) return typeof given['id'] === 'string' ? given['id'] : null;
  if (CALLBACK_ROUTE.test(pattern) && typeof given['token'] === 'string' && runtime.callbackAgent) return runtime.callbackAgent(given['token']);
  return null;
}

function bodyOf(request: FastifyRequest): string | Uint8Array<ArrayBuffer> | undefined {
  const body: unknown = request.body;
  if (body === undefined || body === null || request.method === 'GET' || request.method === 'HEAD') return undefined;
  if (Buffer.isBuffer(body)) return Uint8Array.from(body);
  if (typeof body === 'string') return body;
  return JSON.stringify(body);
}

/** How often a forwarded request that has no answer yet checks that the holder still holds the agent. */
const WATCH_MS = 1_000;

/** How long a request whose holder cannot be reached waits for the holder's lease to run out (default TTL 10 s, plus a beat). */
const UNREACHABLE_WAIT_MS = 15_000;

function movedWithin(moved: AbortSignal, ms: number): Promise<boolean> {
  if (moved.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    moved.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(true);
    }, { once: true });
  });
}

/** Relays the holder's answer; `moved` when `moved` fired before it answered (nothing was sent). */
async function proxy(request: FastifyRequest, reply: FastifyReply, base: string, nodeId: string, moved: AbortSignal): Promise<'sent' | 'moved'> {
  const headers: Record<string, string> = { [FORWARDED_BY]: nodeId, [FORWARDED_HOST]: request.host, [FORWARDED_PROTO]: request.protocol };
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const controller = new AbortController();
  // The caller went away (an SSE stream closed): so does the forwarded request.
  request.raw.once('close', () => controller.abort());
  const onMoved = (): void => controller.abort();
  moved.addEventListener('abort', onMoved, { once: true });
  const body = bodyOf(request);
  let answer: Response;
  try {
    answer = await fetch(`${base.replace(/\/+$/, '')}${request.url}`, {
      method: request.method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: controller.signal,
      redirect: 'manual',
    });
  } catch (error) {
    if (moved.aborted) return 'moved';
    // Not reachable (it died, and its lease has not run out yet): the watch sees the lease go.
    if (await movedWithin(moved, UNREACHABLE_WAIT_MS)) return 'moved';
    throw new DomainError('store_unavailable', `the node holding this agent did not answer (${error instanceof Error ? error.message : String(error)}); retry`);
  } finally {
    moved.removeEventListener('abort', onMoved);
  }
  reply.code(answer.status);
  answer.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) reply.header(name, value);
  });
  reply.header(FORWARDED_BY, nodeId);
  const streaming = (answer.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streaming && answer.body) {
    reply.send(Readable.fromWeb(answer.body as WebStream));
    return 'sent';
  }
  reply.send(Buffer.from(await answer.arrayBuffer()));
  return 'sent';
}
