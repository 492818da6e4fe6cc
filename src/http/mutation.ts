import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RuntimeApi } from '../runtime/api.js';
import { assertVersion, ifMatchVersion } from './concurrency.js';
import { respondIdempotently, type StoredResponse } from './idempotency.js';

/**
 * The common path of a mutating route whose runtime operation takes no `expected_version`:
 * Idempotency-Key replay first (a replay answers even if the agent moved on), then the If-Match
 * check against the agent's current `state_version`, then the operation.
 */
export function mutation<B>(
  runtime: RuntimeApi,
  request: FastifyRequest,
  reply: FastifyReply,
  agentId: string | null,
  operation: () => Promise<StoredResponse<B>>,
): Promise<B> {
  const expected = agentId === null ? undefined : ifMatchVersion(request);
  return respondIdempotently(runtime, request, reply, async () => {
    if (agentId !== null) await assertVersion(runtime, agentId, expected);
    return operation();
  });
}
