import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MutationOptions } from '../runtime/api.js';
import { ifMatchVersion } from './concurrency.js';
import { answer, idempotencyReceipt, type StoredResponse } from './idempotency.js';

/**
 * The common path of a mutating route: the runtime operation gets the request's Idempotency-Key
 * (recorded with the effect; a retry is answered from the record, even if the agent moved on since)
 * and its If-Match version (checked in the agent's lane, with the operation), and the route answers.
 */
export async function mutation<B>(request: FastifyRequest, reply: FastifyReply, operation: (options: MutationOptions) => Promise<StoredResponse<B>>): Promise<B> {
  const expected = ifMatchVersion(request);
  const idempotency = idempotencyReceipt(request);
  const options: MutationOptions = { ...(expected !== undefined ? { expected_version: expected } : {}), ...(idempotency ? { idempotency } : {}) };
  return answer(reply, idempotency, await operation(options));
}
