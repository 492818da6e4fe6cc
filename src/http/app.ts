import Fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifySchema } from 'fastify';
import { fastifySSE } from '@fastify/sse';
import fastifySwagger from '@fastify/swagger';
import fastifyWebsocket from '@fastify/websocket';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { DomainError } from '../domain/index.js';
import type { RuntimeApi } from '../runtime/api.js';
import { registerAgentRoutes } from './agents.js';
import { bearerAuth, type AuthOptions } from './auth.js';
import { callbackRoutes } from './callbacks.js';
import { acceptUtf8JsonOnly } from './content-types.js';
import { clientErrorHandler, enforceEnvelope, errorHandler, validationError } from './errors.js';
import { registerEventRoutes } from './events.js';
import { registerForwarding } from './forwarding.js';
import { TurnRelay } from './turn-relay.js';
import { limitJsonDepth } from './json-depth.js';
import { registerHealthRoutes, type RuntimeIdentity } from './health.js';
import { admitsInspectionTicket, registerInspectionRoutes } from './inspection.js';
import { InspectionTickets } from './inspection-tickets.js';
import { registerInspectorRoutes } from './inspector/routes.js';
import { echoRequestId, loggerOptions, RequestLog, requestIdGenerator, type LoggerConfig } from './logging.js';
import { registerMachineRoutes } from './machines.js';
import { registerMessageRoutes } from './messages.js';
import { notFoundOrNotAllowed, RouteMethods } from './methods.js';
import { BEARER_SCHEME, documentObject, documentRoute } from './openapi.js';
import { ShutdownTracker } from './shutdown.js';
import { registerTaskRoutes } from './tasks.js';
import { registerTimerRoutes } from './timers.js';
import { registerTriggerRoutes } from './triggers.js';
import { registerTurnRoutes } from './turns.js';
import type { HttpApp, RouteDeps } from './types.js';
import { registerWaitRoutes } from './waits.js';
import { registerWorkItemRoutes } from './work-items.js';

export const DEFAULT_BODY_LIMIT = 256 * 1024;

export interface BuildAppOptions {
  runtime: RuntimeApi;
  auth: AuthOptions;
  /** Off by default (tests); a config builds a pino logger, an instance is used as is (the CLI's). */
  logger?: false | LoggerConfig | FastifyBaseLogger;
  bodyLimit?: number;
  /** SSE comment heartbeat period (default 15 s). */
  sseHeartbeatMs?: number;
  /** What `/handshake` reports; without it, the lease holder and store kind from `readiness()`. */
  identity?: RuntimeIdentity;
}

export interface ServedRoute {
  method: string;
  url: string;
  /** The route's zod schemas (params, querystring, headers, body, response), for tooling and tests. */
  schema: FastifySchema | undefined;
}

const served = new WeakMap<object, ServedRoute[]>();

/** Every route the app serves, as registered (collected by an `onRoute` hook). */
export function servedRoutes(app: HttpApp): readonly ServedRoute[] {
  return served.get(app) ?? [];
}

/** Shutdown state of an app built here (tests and the CLI read `openCount`). */
const trackers = new WeakMap<object, ShutdownTracker>();
export function shutdownTracker(app: HttpApp): ShutdownTracker | undefined {
  return trackers.get(app);
}

export async function buildApp(options: BuildAppOptions): Promise<HttpApp> {
  const bearer = options.auth.token !== undefined;
  const logging = options.logger
    ? isLogger(options.logger)
      ? { loggerInstance: options.logger }
      : { logger: loggerOptions(options.logger) }
    : { logger: false };
  const app: HttpApp = Fastify({
    ...logging,
    logController: new RequestLog(Boolean(options.logger)),
    schemaErrorFormatter: validationError,
    genReqId: requestIdGenerator(),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    routerOptions: { maxParamLength: 1024 },
    // Every GET answers HEAD (RFC 9110 §9.3.2); the SSE routes answer their own HEAD.
    exposeHeadRoutes: true,
    // A closing server answers through the onRequest hook below, with the envelope.
    return503OnClosing: false,
    clientErrorHandler,
    // Router-level failures (a malformed URL) get the envelope too.
    frameworkErrors: (error, request, reply) => {
      errorHandler(error, request as unknown as FastifyRequest, reply as unknown as FastifyReply);
    },
  }).withTypeProvider<ZodTypeProvider>();

  const routes: ServedRoute[] = [];
  served.set(app, routes);
  const shutdown = new ShutdownTracker();
  trackers.set(app, shutdown);
  const deps: RouteDeps = { runtime: options.runtime, shutdown };

  const methods = new RouteMethods();
  app.addHook('onRoute', (route) => {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      methods.add(String(method), route.url);
      // HEAD routes are GET's twins: not listed (nor documented) as routes of their own.
      if (String(method) !== 'HEAD') routes.push({ method: String(method), url: route.url, schema: route.schema });
    }
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundOrNotAllowed(methods));
  acceptUtf8JsonOnly(app);
  app.addHook('onRequest', echoRequestId);
  app.addHook('onSend', enforceEnvelope);
  // Before the hooks that can refuse a request: its own onRequest hook marks an upgrade, so a
  // refused upgrade (401, 503) still has its socket closed once the answer is sent.
  await app.register(fastifyWebsocket, { options: { maxPayload: 64 * 1024 } });
  app.addHook('onRequest', async (_request, reply) => {
    if (!shutdown.closing) return;
    // A keep-alive connection that brings a request while the server closes goes with the answer
    // (the server closed the idle ones once, when it started closing).
    reply.header('connection', 'close');
    throw new DomainError('runtime_shutting_down', 'the server is shutting down');
  });
  const tickets = new InspectionTickets();
  app.addHook('onRequest', bearerAuth(options.auth, admitsInspectionTicket(tickets)));
  app.addHook('preValidation', limitJsonDepth);
  // A cluster node forwards a request for an agent another node holds (after the depth limit, before validation).
  const nodeId = (): string => options.identity?.node_id ?? 'unknown';
  const relay = new TurnRelay(options.runtime, nodeId);
  registerForwarding(app, options.runtime, nodeId);
  app.addHook('preClose', async () => {
    shutdown.closeAll();
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'holon-xstate control plane',
        version: '1.0.0',
        description: 'Durable actor runtime for long-lived agents. Every non-2xx answer is the ErrorEnvelope.',
      },
      servers: [{ url: '/', description: 'this server (paths are relative to the address the document was fetched from)' }],
      // Declared in both modes: optional in local mode, required on /api/* with a control token.
      components: { securitySchemes: { bearer: BEARER_SCHEME } },
    },
    transform: documentRoute(bearer),
    transformObject: documentObject(),
  });
  await app.register(fastifySSE, { heartbeatInterval: options.sseHeartbeatMs ?? 15_000 });

  registerHealthRoutes(app, deps, { authMode: bearer ? 'bearer' : 'local', startedAt: new Date(), identity: options.identity });
  registerAgentRoutes(app, deps);
  registerMessageRoutes(app, deps);
  registerWorkItemRoutes(app, deps);
  registerWaitRoutes(app, deps);
  registerTimerRoutes(app, deps);
  registerTaskRoutes(app, deps);
  registerTriggerRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerTurnRoutes(app, deps, relay);
  registerMachineRoutes(app, deps);
  registerInspectionRoutes(app, deps, { secrets: options.auth.token === undefined ? [] : [options.auth.token], tickets, nodeId });
  registerInspectorRoutes(app);
  await app.register(async (scope) => callbackRoutes(scope, deps));

  return app;
}

function isLogger(value: LoggerConfig | FastifyBaseLogger): value is FastifyBaseLogger {
  return typeof (value as Partial<FastifyBaseLogger>).child === 'function';
}
