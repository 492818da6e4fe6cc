import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError, type ErrorCode, type ErrorEnvelope } from '../domain/index.js';

/**
 * Every non-2xx answer is `{ok:false, error:{code, message, retryable, details?}}`. Codes outside
 * the domain's `ErrorCode` enum are used only for conditions the domain cannot raise.
 */
type WireCode = ErrorCode | 'route_not_found' | 'method_not_allowed' | 'machine_not_found' | 'not_acceptable' | 'unsupported_media_type';

/** A failure only the HTTP layer can have (no domain code fits); mapped like a DomainError. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: WireCode,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface WireError {
  status: number;
  body: ErrorEnvelope;
}

export function envelope(code: WireCode, message: string, retryable = false, details?: Record<string, unknown>): ErrorEnvelope {
  return { ok: false, error: details === undefined ? { code, message, retryable } : { code, message, retryable, details } };
}

function wire(status: number, code: WireCode, message: string, details?: Record<string, unknown>): WireError {
  return { status, body: envelope(code, message, status === 503, details) };
}

interface ValidationIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** The failing paths, prefixed by the request part (`body/text`, `params/id`, `querystring/limit`). */
function validationDetails(error: FastifyError): Record<string, unknown> {
  const part = error.validationContext ?? 'request';
  const issues = ((error.validation ?? []) as ValidationIssue[]).map((issue) => {
    const path = `${part}${issue.instancePath && issue.instancePath !== '/' ? issue.instancePath : ''}`;
    const keys = issue.params?.['keys'];
    return {
      path,
      code: issue.keyword ?? 'invalid',
      message: issue.message ?? 'invalid value',
      ...(Array.isArray(keys) ? { keys: keys.filter((k): k is string => typeof k === 'string') } : {}),
    };
  });
  return { issues };
}

/** Fastify's client errors (a too-large body and an unsupported media type: see requestSpecific). */
const FASTIFY_CLIENT_ERRORS: Readonly<Record<string, WireError>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: wire(400, 'invalid_json', 'the body is not valid JSON'),
  FST_ERR_CTP_EMPTY_JSON_BODY: wire(400, 'invalid_json', 'the body is empty but the content type is application/json'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: wire(400, 'invalid_request', 'the body size does not match Content-Length'),
  FST_ERR_CTP_INVALID_TYPE: wire(400, 'invalid_request', 'a body needs a Content-Type header: this route takes application/json'),
  FST_ERR_BAD_URL: wire(400, 'invalid_request', 'malformed URL'),
};

/** Echoed client input is cut short and kept printable. */
function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 80 ? `${printable.slice(0, 80)}...` : printable;
}

/** Errors whose answer depends on the request: what it sent, and what the route takes. */
function requestSpecific(code: string | undefined, request: FastifyRequest): WireError | null {
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = request.routeOptions.bodyLimit;
    return wire(413, 'payload_too_large', `the body exceeds the limit of ${limit} bytes (${Math.round((limit / 1024) * 10) / 10} KiB)`);
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    const type = (request.headers['content-type'] ?? '').trim();
    return type === ''
      ? wire(400, 'invalid_request', 'a body needs a Content-Type header: this route takes application/json (UTF-8)')
      : wire(415, 'unsupported_media_type', `unsupported Content-Type '${shown(type)}': this route takes application/json (UTF-8)`);
  }
  return null;
}

function byStatus(status: number): WireError {
  switch (status) {
    case 401:
      return wire(401, 'unauthorized', 'missing or invalid bearer token');
    case 403:
      return wire(403, 'forbidden', 'forbidden');
    case 404:
      return wire(404, 'route_not_found', 'no such route');
    case 406:
      return wire(406, 'not_acceptable', 'this route only produces text/event-stream');
    case 405:
      return wire(405, 'method_not_allowed', 'method not allowed');
    case 413:
      return wire(413, 'payload_too_large', 'the body exceeds the size limit');
    case 415:
      return wire(415, 'unsupported_media_type', 'unsupported content type');
    case 503:
      return wire(503, 'runtime_shutting_down', 'the server is shutting down');
    default:
      return status >= 400 && status < 500
        ? wire(status, 'invalid_request', 'invalid request')
        : wire(500, 'internal_error', 'internal error');
  }
}

/** Maps any thrown value to the wire error; `internal` tells the caller to log it. */
export function toWireError(error: unknown): WireError & { internal: boolean } {
  if (error instanceof DomainError) {
    return {
      status: error.httpStatus,
      body: envelope(error.code, error.message, error.retryable, error.details),
      internal: error.httpStatus >= 500 && !error.retryable,
    };
  }
  if (error instanceof HttpError) {
    return { ...wire(error.status, error.code, error.message), internal: false };
  }
  const fastifyError = error as Partial<FastifyError> | null;
  if (fastifyError && typeof fastifyError === 'object') {
    if (hasZodFastifySchemaValidationErrors(fastifyError)) {
      const details = validationDetails(fastifyError as FastifyError);
      const first = (details['issues'] as Array<{ path: string; message: string }>)[0];
      const message = first ? `invalid request: ${first.path}: ${first.message}` : 'invalid request';
      return { ...wire(400, 'invalid_request', message, details), internal: false };
    }
    const known = fastifyError.code ? FASTIFY_CLIENT_ERRORS[fastifyError.code] : undefined;
    if (known) return { ...known, internal: false };
    const status = fastifyError.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) return { ...byStatus(status), internal: false };
  }
  return { ...wire(500, 'internal_error', 'internal error'), internal: true };
}

/**
 * Fastify's message for a failed validation (`body/text Required, …`, as its default formatter
 * words it), as an error without a stack trace: a refusal, not a fault, and capturing the stack
 * was most of a 400's cost. The answer is built from the issues (`validationDetails`).
 */
export function validationError(issues: ReadonlyArray<{ instancePath?: string; message?: string }>, dataVar: string): Error {
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  const error = new Error(issues.map((issue) => `${dataVar}${issue.instancePath ?? ''} ${issue.message ?? 'invalid value'}`).join(', '));
  Error.stackTraceLimit = stackTraceLimit;
  return error;
}

/** Replies whose body the error handler made: an envelope already, so `enforceEnvelope` lets it through unread. */
const enveloped = new WeakSet<FastifyReply>();

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = requestSpecific((error as Partial<FastifyError> | null)?.code, request) ?? toWireError(error);
  if ('internal' in mapped && mapped.internal) request.log.error({ err: error }, 'request failed');
  if (mapped.status === 401) reply.header('WWW-Authenticate', 'Bearer');
  const retryAfter = mapped.body.error.details?.['retry_after_s'];
  if (mapped.status === 429 && typeof retryAfter === 'number') reply.header('Retry-After', String(retryAfter));
  enveloped.add(reply);
  void reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
}

function isEnvelope(value: unknown): boolean {
  if (!value || typeof value !== 'object') return false;
  const v = value as { ok?: unknown; error?: { code?: unknown } };
  return v.ok === false && typeof v.error === 'object' && v.error !== null && typeof v.error.code === 'string';
}

/**
 * The last line of defence: a non-2xx answer produced outside the error handler (a plugin replying
 * directly, e.g. @fastify/sse's 406) is rewritten into the envelope.
 */
export async function enforceEnvelope(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode < 400 || enveloped.has(reply)) return payload;
  if (payload !== null && typeof payload === 'object' && !Buffer.isBuffer(payload)) return payload; // a stream
  const text = Buffer.isBuffer(payload) ? payload.toString('utf8') : typeof payload === 'string' ? payload : '';
  try {
    if (isEnvelope(JSON.parse(text))) return payload;
  } catch {
    // not JSON: rewrite below
  }
  reply.type('application/json; charset=utf-8');
  return JSON.stringify(byStatus(reply.statusCode).body);
}

/** Answers HTTP-parser-level failures (bad request line, oversized headers) with the envelope too. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  const body = JSON.stringify(envelope('invalid_request', reason.toLowerCase()));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
