import type { Lease, Store } from '../../store/store.js';

/**
 * Whether the store still names `lease` (its holder and fencing token) as the write lease. A
 * commit is fenced by the store itself; this is for a side effect that happens before any commit
 * could fence it (starting a command), so that an instance another one took over from learns it
 * before it acts, not after. Expiry alone does not count: the store has no clock, and an expired
 * lease nobody took is still this holder's to renew.
 */
export async function stillHoldsLease(store: Store, lease: Lease | null): Promise<boolean> {
  if (!lease) return false;
  const current = await store.readLease();
  return current !== null && current.holder === lease.holder && current.fencing_token === lease.fencing_token;
}
