import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/index.js';
import type { RuntimeApi } from '../runtime/api.js';
import { canonicalJson } from './canonical-json.js';

/** A response as the idempotency store keeps it (JSON only). */
export interface StoredResponse<B> {
  status: number;
  body: B;
}

const KEY = /^[\x21-\x7e][\x20-\x7e]{0,198}[\x21-\x7e]$|^[\x21-\x7e]$/;

/** The request's `Idempotency-Key`, or undefined; a malformed key is a 400. */
export function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !KEY.test(raw)) {
    throw new DomainError('invalid_request', 'Idempotency-Key must be 1-200 printable ASCII characters', {
      issues: [{ path: 'headers/idempotency-key', code: 'invalid_format', message: 'expected 1-200 printable ASCII characters' }],
    });
  }
  return raw;
}

/**
 * Method + route pattern + SHA-256 of everything that shapes the outcome (params, query, parsed
 * body, If-Match): the same key with a different request is an `idempotency_conflict`.
 */
export function requestFingerprint(request: FastifyRequest): string {
  const material = canonicalJson({
    params: request.params ?? null,
    query: request.query ?? null,
    body: request.body ?? null,
    if_match: request.headers['if-match'] ?? null,
  });
  const hash = createHash('sha256').update(material, 'utf8').digest('hex');
  return `${request.method} ${request.routeOptions.url ?? request.url} ${hash}`;
}

/** Runs `operation` once per Idempotency-Key (plainly without one); the stored value must be JSON. */
export async function runIdempotently<T>(
  runtime: RuntimeApi,
  request: FastifyRequest,
  operation: () => Promise<T>,
): Promise<{ value: T; replayed: boolean }> {
  const key = idempotencyKey(request);
  if (key === undefined) return { value: await operation(), replayed: false };
  return runtime.idempotent(key, requestFingerprint(request), operation);
}

/**
 * Runs `operation` under the request's Idempotency-Key and answers with its stored response; a
 * replay carries `Idempotent-Replay: true`.
 */
export async function respondIdempotently<B>(
  runtime: RuntimeApi,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: () => Promise<StoredResponse<B>>,
): Promise<B> {
  const { value, replayed } = await runIdempotently(runtime, request, operation);
  if (replayed) reply.header('Idempotent-Replay', 'true');
  reply.code(value.status);
  return value.body;
}
