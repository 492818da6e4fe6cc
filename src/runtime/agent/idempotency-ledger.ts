import { DomainError, type IdempotencyClaim, type IdempotencyRecord } from '../../domain/index.js';
import type { AgentDoc } from './agent-doc.js';

/**
 * What the document remembers of `claim.key`: `undefined` for a key it has not seen, the recorded
 * answer for the same request, and `idempotency_conflict` for the same key with another request.
 */
export function recordedAnswer(doc: AgentDoc, claim: IdempotencyClaim): { value: unknown } | undefined {
  const record = doc.idempotency.findLast((r) => r.key === claim.key);
  if (!record) return undefined;
  if (record.fingerprint !== claim.fingerprint) {
    throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another request', { idempotency_key: claim.key });
  }
  return { value: record.value };
}

/** Records the key with the answer, in the draft whose commit makes the request's effect durable. */
export function recordAnswer(doc: AgentDoc, claim: IdempotencyClaim, value: unknown, at: Date): void {
  const json = JSON.stringify(value) ?? 'null';
  const record: IdempotencyRecord = { key: claim.key, fingerprint: claim.fingerprint, at: at.toISOString(), value: JSON.parse(json) as unknown, bytes: json.length };
  // Replaced, not edited: committed documents share the list (copyDoc).
  doc.idempotency = [...doc.idempotency, record];
}
