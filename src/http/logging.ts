import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { prettyStream } from './pretty-log.js';

const CALLBACK_PATH = /^(\/callbacks\/[^/?#]+\/)[^/?#]*/;
const TICKET_PARAM = /([?&]ticket=)[^&#]*/g;

/** A capability URL's token, or an inspection ticket, is a bearer secret: it never reaches a log line or an error body. */
export function redactPath(url: string): string {
  return url.replace(CALLBACK_PATH, '$1[redacted]').replace(TICKET_PARAM, '$1[redacted]');
}

/** Fastify's default request fields, with the callback token replaced and no headers at all. */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactPath(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

export interface LoggerConfig {
  level?: string;
  /** Where log lines go (default stdout); tests pass a capturing stream. */
  stream?: NodeJS.WritableStream;
  /** `json` (default): one pino JSON record per line; `pretty`: one plain line per record. */
  format?: LogFormat;
}

/** The label of the request id in every log line of a request. */
const REQUEST_ID_LABEL = 'req_id';

/** pino options: token-free request lines, Authorization always censored, JSON or plain lines. */
export function loggerOptions(config: LoggerConfig): Record<string, unknown> {
  const out = config.stream ?? process.stdout;
  return {
    level: config.level ?? 'info',
    stream: config.format === 'pretty' ? prettyStream(out) : out,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.headers.authorization'], censor: '[redacted]' },
    serializers: { req: serializeRequest },
  };
}

/**
 * A pino logger writing as `config` says: `pino()` takes its destination as a second argument
 * (an options `stream`, as Fastify's `logger` option takes it, would be ignored).
 */
export function createLogger(config: LoggerConfig): Logger {
  const { stream, ...options } = loggerOptions(config) as { stream: NodeJS.WritableStream } & Record<string, unknown>;
  return pino(options, stream as DestinationStream);
}

const REQUEST_ID_HEADER = 'x-request-id';

/** What an incoming `X-Request-Id` may be to be adopted: short, printable, no spaces or quotes. */
const ADOPTABLE_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:/+=@-]{0,127}$/;

/**
 * Fastify's `genReqId`: a valid incoming `X-Request-Id` is kept (a proxy's or client's id then
 * names the request end to end); otherwise `<process prefix>-<counter>`, the prefix 48 random bits
 * drawn at startup, so ids do not repeat across restarts or processes.
 */
export function requestIdGenerator(): (request: IncomingMessage) => string {
  const prefix = randomBytes(6).toString('base64url');
  let counter = 0;
  return (request) => {
    const incoming = request.headers[REQUEST_ID_HEADER];
    if (typeof incoming === 'string' && ADOPTABLE_REQUEST_ID.test(incoming)) return incoming;
    counter += 1;
    return `${prefix}-${counter.toString(36)}`;
  };
}

/** `onRequest`: every answer, errors and streams included, carries its request id. */
export async function echoRequestId(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header(REQUEST_ID_HEADER, request.id);
}

/**
 * Fastify's request log lines, reduced to one per request, written once the response is sent:
 * method, route (the pattern, e.g. `/api/agents/:id/status`), url (a capability token redacted),
 * status, duration and, through the child logger, the request id. Info, or error when the
 * response failed to be sent; a handler's own failure is logged by the error handler.
 */
export class RequestLog extends LogController {
  /** `writes`: the app logs at all (with logging off, no line's fields are worked out). */
  constructor(private readonly writes = true) {
    super({ requestIdLogLabel: REQUEST_ID_LABEL });
  }

  override incomingRequest(): void {
    // one line per request: the completed one
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!this.writes) return;
    const fields = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      url: redactPath(request.url),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) request.log.error({ ...fields, err: error }, 'request completed');
    else request.log.info(fields, 'request completed');
  }
}
