import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope } from './errors.js';
import { redactPath } from './logging.js';

/**
 * Which methods each route path answers, so that a known path asked with another method gets
 * 405 with `Allow` (RFC 9110 §15.5.6) instead of 404. Paths are Fastify's (`/a/:id/b`); a
 * `:param` segment matches any one non-empty segment.
 */
export class RouteMethods {
  readonly #byPath = new Map<string, { segments: string[]; methods: Set<string> }>();

  add(method: string, url: string): void {
    let entry = this.#byPath.get(url);
    if (!entry) {
      entry = { segments: url.split('/'), methods: new Set() };
      this.#byPath.set(url, entry);
    }
    entry.methods.add(method.toUpperCase());
  }

  /** The methods some route answers at `path` (sorted), or an empty list for an unknown path. */
  allowed(path: string): string[] {
    const segments = path.split('/');
    const methods = new Set<string>();
    for (const entry of this.#byPath.values()) {
      if (entry.segments.length !== segments.length) continue;
      const matches = entry.segments.every((segment, i) => (segment.startsWith(':') ? (segments[i] ?? '') !== '' : segment === segments[i]));
      if (matches) for (const method of entry.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}

/**
 * The not-found handler: 405 with `Allow` when the path is known under other methods, else the
 * 404 envelope. The path is redacted (a callback path holds a capability token).
 */
export function notFoundOrNotAllowed(methods: RouteMethods) {
  return (request: FastifyRequest, reply: FastifyReply): void => {
    const path = request.url.split('?')[0] ?? '/';
    const shown = redactPath(path);
    const allowed = methods.allowed(path);
    if (allowed.length > 0) {
      void reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(envelope('method_not_allowed', `${request.method} is not allowed on ${shown}; allowed: ${allowed.join(', ')}`));
      return;
    }
    void reply.code(404).send(envelope('route_not_found', `no route ${request.method} ${shown}`));
  };
}
