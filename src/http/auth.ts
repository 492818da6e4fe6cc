import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../domain/index.js';

export interface AuthOptions {
  /** The control token; without one the server runs in local mode (no auth, loopback only). */
  token?: string;
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** `/api/*` routes need the bearer token; `/callbacks/*` carry their own capability, the rest is open. */
export function isProtectedRoute(routeUrl: string | undefined): boolean {
  return routeUrl !== undefined && (routeUrl === '/api' || routeUrl.startsWith('/api/'));
}

function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ \t]+(\S.*)$/i.exec(header.trim());
  return match?.[1]?.trim() ?? null;
}

/**
 * An `onRequest` hook enforcing the bearer token. Both sides are hashed first so the comparison is
 * constant-time regardless of the presented token's length. `admits` lets a request without the
 * header through on a credential of its own (an inspection ticket in a WebSocket URL).
 */
export function bearerAuth(options: AuthOptions, admits: (request: FastifyRequest) => boolean = () => false): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const expected = options.token === undefined ? null : digest(options.token);
  return async (request) => {
    if (expected === null || !isProtectedRoute(request.routeOptions.url)) return;
    const presented = bearerOf(request.headers.authorization);
    if (presented !== null ? timingSafeEqual(digest(presented), expected) : admits(request)) return;
    throw new DomainError('unauthorized', 'missing or invalid bearer token');
  };
}
