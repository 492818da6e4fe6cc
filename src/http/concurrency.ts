import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain/index.js';

const IF_MATCH = /^(?:W\/)?"?(\d{1,15})"?$/;

function invalid(message: string): DomainError {
  return new DomainError('invalid_request', message, {
    issues: [{ path: 'headers/if-match', code: 'invalid_format', message }],
  });
}

/** The state_version named by `If-Match: "<n>"`, or undefined without the header. */
export function ifMatchVersion(request: FastifyRequest): number | undefined {
  const raw = request.headers['if-match'];
  if (raw === undefined) return undefined;
  const match = typeof raw === 'string' ? IF_MATCH.exec(raw.trim()) : null;
  if (!match?.[1]) throw invalid('If-Match must be "<state_version>"');
  return Number(match[1]);
}

/**
 * A `preValidation` hook for routes whose body schema has `expected_version`: `If-Match` fills it
 * in, so a body that must carry it (transitions) may carry it in the header instead.
 */
export async function ifMatchIntoBody(request: FastifyRequest): Promise<void> {
  const fromHeader = ifMatchVersion(request);
  if (fromHeader === undefined) return;
  const body = request.body;
  if (body === undefined || body === null) {
    request.body = { expected_version: fromHeader };
    return;
  }
  if (typeof body !== 'object' || Array.isArray(body)) return; // the schema rejects it
  const record = body as Record<string, unknown>;
  if (record['expected_version'] === undefined) record['expected_version'] = fromHeader;
  else if (record['expected_version'] !== fromHeader) throw invalid('If-Match and expected_version disagree');
}
