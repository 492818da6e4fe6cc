import { Readable } from 'node:stream';
import type { ReadableStream as WebStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { agentOfRunId, DomainError } from '../domain/index.js';
import type { AgentRoute, RouteOptions, RuntimeApi } from '../runtime/api.js';
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
    const forwarded = request.headers[FORWARDED_BY] !== undefined;
    // A request another node forwarded is routed from the database, not from what this node remembers.
    const where = await target.locate(forwarded);
    if (where.kind === 'local') return;
    if (where.kind === 'unavailable' || forwarded) {
      // Said before anything was done: the sender may look again and send it where the agent is.
      if (forwarded) reply.header(NOT_HOLDER, where.holder);
      throw unreachable(target.agentId, where.holder);
    }
    // The route may be one this node remembered, and stale: a holder that refuses the request or
    // cannot be reached makes it look once more, and the request goes where the agent is now.
    let outcome = await forwardWatched(request, reply, target, where, nodeId(), true);
    if (outcome.kind === 'rerouted') {
      const now = outcome.now;
      if (now.kind === 'local') return;
      if (now.kind === 'unavailable') throw unreachable(target.agentId, now.holder);
      outcome = await forwardWatched(request, reply, target, now, nodeId(), false);
    }
    if (outcome.kind === 'sent') return reply;
    if (outcome.kind === 'moved' && outcome.now.kind === 'local') return;
    const holder = outcome.kind === 'moved' && outcome.now.kind !== 'local' ? outcome.now.holder : where.holder;
    throw new DomainError('store_unavailable', `agent ${target.agentId} moved to node ${holder} while this request waited; retry`, { agent_id: target.agentId, holder });
  });
}

/** Set on the refusal of a node a request was forwarded to that does not hold the agent: nothing was done, and the sender may route again. */
export const NOT_HOLDER = 'x-holon-not-holder';

function unreachable(agentId: string, holder: string): DomainError {
  return new DomainError('store_unavailable', `agent ${agentId} is held by node ${holder}, which cannot be reached from this node now; retry`, { agent_id: agentId, holder });
}

type Target = { agentId: string; locate: (fresh: boolean) => Promise<AgentRoute>; confirm?: (route: Forward) => void };
type Forward = Extract<AgentRoute, { kind: 'forward' }>;
type Outcome = { kind: 'sent' } | { kind: 'moved'; now: AgentRoute } | { kind: 'rerouted'; now: AgentRoute };

/** Whether `now` sends the request elsewhere than `where` did: served here, another holder, or the holder at another address (the same holder unregistered is not: its lease still runs). */
const movedFrom = (now: AgentRoute, where: Forward): boolean => now.kind === 'local' || now.holder !== where.holder || (now.kind === 'forward' && now.url !== where.url);

/**
 * Proxies the request to `where` and relays the answer. Until the holder answers, its lease is
 * watched: a holder that stopped (paused, its lease run out) loses the agent, and the request is
 * served where it is then (`moved`). With `reroute`, a refusal (`NOT_HOLDER`) or an unreachable
 * holder makes it look again at once, and a different route comes back as `rerouted`.
 */
async function forwardWatched(request: FastifyRequest, reply: FastifyReply, target: Target, where: Forward, nodeId: string, reroute: boolean): Promise<Outcome> {
  const moved = new AbortController();
  let watching = true;
  const watch = async (): Promise<void> => {
    while (watching) {
      await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
      if (!watching) return;
      const now = await target.locate(true).catch(() => where);
      if (movedFrom(now, where)) {
        moved.abort(now);
        return;
      }
    }
  };
  void watch();
  const movedTo = (): Outcome => ({ kind: 'moved', now: moved.signal.reason as AgentRoute });
  try {
    const outcome = await proxy(request, reply, where.url, nodeId, moved.signal);
    if (typeof outcome === 'number') {
      // Served there: it held the agent then, and the route it came under holds a while longer.
      if (outcome >= 200 && outcome < 300) target.confirm?.(where);
      return { kind: 'sent' };
    }
    if (outcome === 'moved') return movedTo();
    if (reroute) {
      const now = await target.locate(true).catch(() => where);
      if (movedFrom(now, where)) return { kind: 'rerouted', now };
    }
    if (outcome === 'refused') throw unreachable(target.agentId, where.holder);
    // Not reachable (it died, and its lease has not run out yet): the watch sees the lease go.
    if (await movedWithin(moved.signal, UNREACHABLE_WAIT_MS)) return movedTo();
    throw new DomainError('store_unavailable', `the node holding this agent did not answer (${outcome.message}); retry`);
  } finally {
    watching = false;
  }
}

/** The agent a request is for (as shown in an error) and how to find where it is served; `null`: not an agent's request. */
async function targetOf(runtime: RuntimeApi, route: (agentId: string, options?: RouteOptions) => Promise<AgentRoute>, request: FastifyRequest): Promise<Target | null> {
  const pattern = request.routeOptions.url ?? '';
  const routeCreate = runtime.routeCreate?.bind(runtime);
  if (pattern === CREATE_ROUTE && request.method === 'POST' && routeCreate) {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const named = typeof body['agent_id'] === 'string' ? body['agent_id'] : undefined;
    const header = request.headers['idempotency-key'];
    const key = typeof header === 'string' ? header : undefined;
    if (named === undefined && key === undefined) return null;
    return { agentId: named ?? 'named by the Idempotency-Key', locate: (fresh) => routeCreate(named, key, { fresh }) };
  }
  const given = (request.params ?? {}) as Record<string, unknown>;
  if (TURN_RUN_ROUTE.test(pattern) && typeof given['run_id'] === 'string') {
    const agentId = agentOfRunId(given['run_id']);
    return agentId === undefined ? null : { agentId, locate: (fresh) => route(agentId, { fresh }), confirm: (where) => runtime.confirmRoute?.(agentId, where) };
  }
  const agentId = await agentOf(runtime, pattern, request.params);
  return agentId === null ? null : { agentId, locate: (fresh) => route(agentId, { fresh }), confirm: (where) => runtime.confirmRoute?.(agentId, where) };
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

/**
 * Relays the holder's answer (its status); `moved` when `moved` fired before it answered, `refused`
 * when it answered that it does not hold the agent (`NOT_HOLDER`), or the error when it could not
 * be reached (nothing was sent in these three).
 */
async function proxy(request: FastifyRequest, reply: FastifyReply, base: string, nodeId: string, moved: AbortSignal): Promise<number | 'moved' | 'refused' | Error> {
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
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    moved.removeEventListener('abort', onMoved);
  }
  if (answer.headers.has(NOT_HOLDER)) {
    await answer.arrayBuffer().catch(() => undefined);
    return 'refused';
  }
  reply.code(answer.status);
  answer.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) reply.header(name, value);
  });
  reply.header(FORWARDED_BY, nodeId);
  const streaming = (answer.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streaming && answer.body) {
    reply.send(Readable.fromWeb(answer.body as WebStream));
    return answer.status;
  }
  reply.send(Buffer.from(await answer.arrayBuffer()));
  return answer.status;
}
