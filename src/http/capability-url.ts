import type { FastifyRequest } from 'fastify';
import type { DeliveryMode } from '../domain/index.js';
import { FORWARDED_BY, FORWARDED_HOST, FORWARDED_PROTO } from './forwarded-headers.js';

const PATH_OF: Readonly<Record<DeliveryMode, string>> = { wake_hint: 'wake', enqueue_message: 'enqueue' };

/** A host header's shape (a name or an address, an optional port): nothing else goes into a URL. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * `<base>/callbacks/<wake|enqueue>/<token>`, the base taken from the request that minted it: the
 * client's, also when another node forwarded the request here (`X-Holon-Forwarded-By` with the
 * host and scheme it was asked on), so the URL names the address the client uses.
 */
export function triggerUrl(request: FastifyRequest, mode: DeliveryMode, token: string): string {
  const { host, protocol } = clientBase(request);
  return `${protocol}://${host}/callbacks/${PATH_OF[mode]}/${encodeURIComponent(token)}`;
}

function clientBase(request: FastifyRequest): { host: string; protocol: string } {
  const host = request.headers[FORWARDED_HOST];
  const proto = request.headers[FORWARDED_PROTO];
  if (typeof request.headers[FORWARDED_BY] === 'string' && typeof host === 'string' && HOST.test(host) && (proto === 'http' || proto === 'https')) {
    return { host, protocol: proto };
  }
  return { host: request.host || 'localhost', protocol: request.protocol };
}
