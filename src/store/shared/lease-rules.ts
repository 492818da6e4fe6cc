import { DomainError } from '../../domain/index.js';
import type { Lease } from '../store.js';

/**
 * The lease rules every Store shares, as pure functions over the current lease record.
 * A released lease keeps its record (so the next token is still higher) but is expired.
 */

/** Written as `expires_at` by `releaseLease`: expired for any `now` a caller can pass. */
export const RELEASED_AT = new Date(0).toISOString();

export function isExpired(lease: Lease, now: Date): boolean {
  return Date.parse(lease.expires_at) <= now.getTime();
}

export function assertTtl(ttl_ms: number): void {
  if (!Number.isFinite(ttl_ms) || ttl_ms <= 0) {
    throw new DomainError('invalid_request', `lease ttl_ms must be a positive number, got ${ttl_ms}`);
  }
}

/** Holders name instances in records and SQL: non-empty, printable. */
export function assertHolder(holder: string): void {
  if (holder.length === 0) throw new DomainError('invalid_request', 'lease holder must not be empty');
  if (holder.length > 200 || /[\u0000-\u001f]/.test(holder)) {
    throw new DomainError('invalid_request', `lease holder ${JSON.stringify(holder.slice(0, 40))} must be at most 200 printable characters`);
  }
}

function expiry(now: Date, ttl_ms: number): string {
  return new Date(now.getTime() + ttl_ms).toISOString();
}

/**
 * Free or expired → a new holder gets the next token; the same holder keeps its token (nobody
 * else can have written in between, because nobody else held a token). Otherwise `lease_lost`.
 */
export function decideAcquire(current: Lease | null, holder: string, ttl_ms: number, now: Date): Lease {
  assertTtl(ttl_ms);
  assertHolder(holder);
  if (current === null) {
    return { holder, fencing_token: 1, acquired_at: now.toISOString(), expires_at: expiry(now, ttl_ms) };
  }
  if (current.holder === holder) {
    return { ...current, expires_at: expiry(now, ttl_ms) };
  }
  if (isExpired(current, now)) {
    return {
      holder,
      fencing_token: current.fencing_token + 1,
      acquired_at: now.toISOString(),
      expires_at: expiry(now, ttl_ms),
    };
  }
  throw new DomainError('lease_lost', `the write lease is held by ${current.holder} until ${current.expires_at}`, {
    holder: current.holder,
    expires_at: current.expires_at,
  });
}

/** Renewal only needs the record to still name this holder and token; an expired but untaken lease renews. */
export function decideRenew(current: Lease | null, lease: Lease, ttl_ms: number, now: Date): Lease {
  assertTtl(ttl_ms);
  if (current === null || current.holder !== lease.holder || current.fencing_token !== lease.fencing_token) {
    throw lostTo(current, lease.fencing_token);
  }
  return { ...current, expires_at: expiry(now, ttl_ms) };
}

/** Returns the record to store, or `null` when the lease is no longer this caller's (nothing to release). */
export function decideRelease(current: Lease | null, lease: Lease): Lease | null {
  if (current === null || current.holder !== lease.holder || current.fencing_token !== lease.fencing_token) {
    return null;
  }
  return { ...current, expires_at: RELEASED_AT };
}

/**
 * A write is allowed only with the current token, and (when the writer knows under which holder
 * it acquired that token) only while the record still names that holder. The store has no clock,
 * so expiry alone does not fence: a newer acquisition does.
 */
export function assertFence(current: Lease | null, fencing_token: number, ownHolder: string | undefined): void {
  if (current === null) {
    throw new DomainError('lease_lost', 'no write lease has been acquired on this store', { fencing_token });
  }
  if (fencing_token !== current.fencing_token || (ownHolder !== undefined && ownHolder !== current.holder)) {
    throw lostTo(current, fencing_token);
  }
}

function lostTo(current: Lease | null, fencing_token: number): DomainError {
  if (current === null) {
    return new DomainError('lease_lost', 'the write lease no longer exists', { fencing_token });
  }
  return new DomainError(
    'lease_lost',
    `fencing token ${fencing_token} is not the current write lease (held by ${current.holder} with token ${current.fencing_token})`,
    { fencing_token, current_fencing_token: current.fencing_token, holder: current.holder },
  );
}
