import { DomainError } from '../../domain/index.js';

/** `make()`'s JSON (or its `null`: no patch), or `invalid_request` naming `what` when the value is not JSON (a cycle, a BigInt, nothing). */
export function toJson<T>(what: string, make: () => T | undefined): T {
  let text: T | undefined;
  try {
    text = make();
  } catch (err) {
    throw new DomainError('invalid_request', `${what} is not JSON-serializable: ${String(err)}`);
  }
  if (text === undefined) throw new DomainError('invalid_request', `${what} is not JSON-serializable`);
  return text;
}
