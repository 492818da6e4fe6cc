import type { FastifyRequest } from 'fastify';
import type { DeliveryMode } from '../domain/index.js';

const PATH_OF: Readonly<Record<DeliveryMode, string>> = { wake_hint: 'wake', enqueue_message: 'enqueue' };

/** `<base>/callbacks/<wake|enqueue>/<token>`, the base taken from the request that minted it. */
export function triggerUrl(request: FastifyRequest, mode: DeliveryMode, token: string): string {
  const host = request.host || 'localhost';
  return `${request.protocol}://${host}/callbacks/${PATH_OF[mode]}/${encodeURIComponent(token)}`;
}
