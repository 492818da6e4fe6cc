import type { FastifyRequest } from 'fastify';

const CALLBACK_PATH = /^(\/callbacks\/[^/?#]+\/)[^/?#]*/;

/** A capability URL's token is a bearer secret: it never reaches a log line or an error body. */
export function redactPath(url: string): string {
  return url.replace(CALLBACK_PATH, '$1[redacted]');
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

export interface LoggerConfig {
  level?: string;
  /** Where log lines go (default stdout); tests pass a capturing stream. */
  stream?: NodeJS.WritableStream;
}

/** pino options for Fastify's `logger`: token-free request lines, Authorization always censored. */
export function loggerOptions(config: LoggerConfig): Record<string, unknown> {
  return {
    level: config.level ?? 'info',
    ...(config.stream ? { stream: config.stream } : {}),
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.headers.authorization'], censor: '[redacted]' },
    serializers: { req: serializeRequest },
  };
}
