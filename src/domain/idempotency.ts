import { z } from 'zod';

/**
 * A mutating request's `Idempotency-Key` and the fingerprint of the request it was sent with
 * (method, route, parameters, body: `src/http/idempotency.ts`). The runtime records the key in
 * the commit that makes the request's effect durable, so a retry — concurrent, or after the
 * process died at any point — finds either no effect and no key, or both.
 */
export const IdempotencyClaim = z.object({
  key: z.string().min(1).max(200),
  fingerprint: z.string().min(1).max(400),
});
export type IdempotencyClaim = z.infer<typeof IdempotencyClaim>;

/** A key as an agent's document remembers it: with what the request answered, replayed on a retry. */
export const IdempotencyRecord = IdempotencyClaim.extend({
  at: z.string(),
  /** The operation's result as the caller received it (minus what must not be stored: a capability token). */
  value: z.unknown(),
  /** Size of `value` as JSON, which the bound on what a document keeps counts. */
  bytes: z.number().int().nonnegative(),
});
export type IdempotencyRecord = z.infer<typeof IdempotencyRecord>;
