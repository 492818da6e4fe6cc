import { Readiness } from '../domain/index.js';
import { envelope } from './errors.js';
import { HandshakeResponse, HealthResponse, NoQuery, OpenApiDocument, openErrors } from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['discovery'];

export const CAPABILITIES = [
  'agents',
  'lifecycle_transitions',
  'snapshots',
  'messages',
  'wake_hints',
  'work_items',
  'waits',
  'timers',
  'tasks',
  'external_triggers',
  'events',
  'events_sse',
  'turn_workers',
  'statecharts',
  'idempotency_keys',
  'optimistic_concurrency',
] as const;

export interface RuntimeIdentity {
  node_id: string;
  store: string;
  started_at: Date;
}

export interface HealthOptions {
  authMode: 'bearer' | 'local';
  /** When the app was built: the fallback `started_at`. */
  startedAt: Date;
  identity: RuntimeIdentity | undefined;
}

export function registerHealthRoutes(app: HttpApp, { runtime }: RouteDeps, options: HealthOptions): void {
  // The port has no identity call; while this node serves, it is the lease holder.
  const identityFromReadiness = async (): Promise<RuntimeIdentity> => {
    const readiness = await runtime.readiness();
    return {
      node_id: readiness.lease.holder ?? 'unknown',
      store: readiness.dependencies.store.kind,
      started_at: options.startedAt,
    };
  };

  app.get(
    '/handshake',
    {
      schema: {
        tags,
        operationId: 'getHandshake',
        summary: 'Protocol, auth mode and runtime identity',
        querystring: NoQuery,
        response: { 200: HandshakeResponse, ...openErrors() },
      },
    },
    async () => {
      const identity = options.identity ?? (await identityFromReadiness());
      return {
        ok: true as const,
        protocol: { name: 'holon-xstate' as const, version: 1 as const },
        auth: { mode: options.authMode, required: options.authMode === 'bearer' },
        capabilities: [...CAPABILITIES],
        runtime: {
          node_id: identity.node_id,
          store: identity.store,
          started_at: identity.started_at.toISOString(),
        },
      };
    },
  );

  app.get(
    '/healthz',
    {
      schema: {
        tags,
        operationId: 'getHealth',
        summary: 'Process alive (200 while serving)',
        querystring: NoQuery,
        response: { 200: HealthResponse, ...openErrors() },
      },
    },
    async () => ({ ok: true as const, uptime_s: process.uptime() }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags,
        operationId: 'getReadiness',
        summary: 'Readiness: process, lease, dependencies, progress; 503 (envelope with the readiness in details) when not ready',
        querystring: NoQuery,
        response: { 200: Readiness, ...openErrors() },
      },
    },
    async (_request, reply) => {
      const readiness = await runtime.readiness();
      if (readiness.ok) return readiness;
      const storeDown = !readiness.dependencies.store.ok;
      return reply
        .code(503)
        .send(
          envelope(
            storeDown ? 'store_unavailable' : 'lease_lost',
            storeDown ? 'the store is unreachable' : 'the write lease is not held',
            true,
            { readiness },
          ),
        );
    },
  );

  app.get(
    '/openapi.json',
    {
      schema: {
        tags,
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI 3.1 document',
        querystring: NoQuery,
        response: { 200: OpenApiDocument, ...openErrors() },
      },
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  );
}
