import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/index.js';
import type { IdempotencyReceipt } from '../runtime/api.js';
import { canonicalJson } from './canonical-json.js';

/** A route's answer: its status and body. */
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

/**
 * The request's Idempotency-Key as a receipt for the runtime: it records the key with the
 * operation's effect, and marks the receipt `replayed` when it answered a retry from the record.
 */
export function idempotencyReceipt(request: FastifyRequest): IdempotencyReceipt | undefined {
  const key = idempotencyKey(request);
  return key === undefined ? undefined : { key, fingerprint: requestFingerprint(request) };
}

/** Sets the status, and `Idempotent-Replay: true` when the runtime answered from a recorded key. */
export function answer<B>(reply: FastifyReply, receipt: IdempotencyReceipt | undefined, { status, body }: StoredResponse<B>): B {
  if (receipt?.replayed) reply.header('Idempotent-Replay', 'true');
  reply.code(status);
  return body;
}
