import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { RuntimeApi } from '../runtime/api.js';
import type { ShutdownTracker } from './shutdown.js';

/** The Fastify instance every route module registers on (zod-typed requests and replies). */
export type HttpApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** What route modules need besides the app. */
export interface RouteDeps {
  runtime: RuntimeApi;
  shutdown: ShutdownTracker;
}
