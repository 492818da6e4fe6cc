import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { WebSocket } from 'ws';
import type { AgentRoute, RuntimeApi } from '../runtime/api.js';
import { FORWARDED_BY } from './forwarded-headers.js';
import type { ShutdownTracker } from './shutdown.js';

/** Request headers an upgrade forwarded to the holder carries as they came. */
const RELAYED_HEADERS = ['authorization', 'x-request-id'] as const;

/**
 * Where an agent's WebSocket is served (issue 19: every route through every node): here, or at
 * the live node that holds the agent (`forward`). A request another node forwarded is served here,
 * never forwarded again; so is every request of a runtime that is not a cluster node.
 */
export async function socketRoute(runtime: RuntimeApi, agentId: string, request: FastifyRequest): Promise<AgentRoute> {
  if (runtime.clustered !== true || runtime.route === undefined || request.headers[FORWARDED_BY] !== undefined) return { kind: 'local' };
  // Fresh: a socket lives long, and one relayed to a node that no longer holds the agent would be served there.
  return runtime.route(agentId, { fresh: true });
}

export interface SocketRelayOptions {
  /** The holder's base URL (`AgentRoute` `forward`). */
  url: string;
  nodeId: string;
  /** Bytes the client may have unsent before it is disconnected (it reconnects to a fresh picture). */
  maxBuffered: number;
  shutdown: ShutdownTracker;
  log: FastifyBaseLogger;
}

/**
 * Relays a one-way WebSocket (the holder speaks, the client listens) from the agent's holder to
 * `client`: the same path and query (a ticket goes with it, redeemed by the holder that minted
 * it), the client's `Authorization`, and `X-Holon-Forwarded-By`. Either side closing closes the
 * other; what the client sends is ignored, as the holder would.
 */
export function relaySocket(client: WebSocket, request: FastifyRequest, options: SocketRelayOptions): void {
  const target = `${options.url.replace(/\/+$/, '').replace(/^http/, 'ws')}${request.url}`;
  const headers: Record<string, string> = { [FORWARDED_BY]: options.nodeId };
  for (const name of RELAYED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const upstream = new WebSocket(target, { headers });
  let done = false;
  const finish = (code: number, reason: string): void => {
    if (done) return;
    done = true;
    untrack();
    if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate();
    else upstream.close();
    if (client.readyState === WebSocket.OPEN) client.close(code, reason);
  };
  const untrack = options.shutdown.track(() => finish(1001, 'server shutting down'));
  client.on('message', () => undefined);
  client.on('close', () => finish(1000, 'client left'));
  upstream.on('message', (data, isBinary) => {
    if (done) return;
    if (client.bufferedAmount > options.maxBuffered) {
      options.log.info('relayed inspection WebSocket client lagging: closed');
      finish(1013, 'lagging: reconnect');
      return;
    }
    client.send(data, { binary: isBinary });
  });
  // The holder refused the upgrade (401, 404, ...) or cannot be reached: the client hears why, as a close.
  upstream.on('unexpected-response', (_req, response) => finish(response.statusCode === 404 ? 4404 : 1011, `the holder answered ${response.statusCode}`));
  upstream.on('error', (error) => {
    options.log.warn({ err: error }, 'relayed inspection WebSocket: the holder cannot be reached');
    finish(1011, 'the holder cannot be reached; retry');
  });
  upstream.on('close', (code, reason) => finish(sendable(code), reason.toString() || 'the holder closed'));
}

/** A close code the relay may send on: the holder's own, unless it is one only a peer's absence gives (1005, 1006, 1015). */
function sendable(code: number): number {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1011;
}
