import { DomainError } from '../../domain/index.js';
import type { AgentLease, AgentLeaseState, HeldAgentLease, Lease, RenewedAgentLeases } from '../store.js';
import { assertHolder, assertTtl, RELEASED_AT } from './lease-rules.js';

/**
 * Agent leases in the embedded stores (memory, lowdb), which have one writer: they ride on the
 * store-wide lease. The holder of that lease owns every agent: an agent lease names it, carries
 * its fencing token (so a takeover of the store lease is a takeover of every agent, with a higher
 * token) and its expiry; anyone else is refused. Releasing an agent lease changes nothing (the
 * store lease stays), and a commit fenced by an agent token is checked exactly as one fenced by
 * the store token. These rules are pure functions over the current store lease.
 */

/** `mine(lease)`: this store instance acquired the store lease's token under the holder it names. */
export type OwnLease = (lease: Lease) => boolean;

function view(lease: Lease, agent_id: string): AgentLease {
  return { agent_id, holder: lease.holder, fencing_token: lease.fencing_token, acquired_at: lease.acquired_at, expires_at: lease.expires_at };
}

export function acquireEmbeddedAgentLease(current: Lease | null, mine: OwnLease, agent_id: string, holder: string, ttl_ms: number): AgentLease {
  assertTtl(ttl_ms);
  assertHolder(holder);
  if (current === null || current.holder !== holder || !mine(current)) {
    throw new DomainError(
      'lease_lost',
      current === null
        ? `agent ${agent_id} has no writer: in an embedded store the holder of the store's write lease writes every agent, and nobody holds it`
        : `agent ${agent_id} is written by ${current.holder}, the holder of the store's write lease (an embedded store has one writer)`,
      current === null ? {} : { holder: current.holder, expires_at: current.expires_at },
    );
  }
  return view(current, agent_id);
}

export function renewEmbeddedAgentLeases(current: Lease | null, mine: OwnLease, holder: string, leases: HeldAgentLease[], ttl_ms: number): RenewedAgentLeases {
  assertTtl(ttl_ms);
  assertHolder(holder);
  const held = current !== null && current.holder === holder && mine(current) ? current : null;
  const renewed: AgentLease[] = [];
  const lost: string[] = [];
  for (const lease of leases) {
    if (held !== null && lease.fencing_token === held.fencing_token) renewed.push(view(held, lease.agent_id));
    else lost.push(lease.agent_id);
  }
  return { renewed, lost };
}

/** The store has no clock: a store lease counts as live until released or taken over. */
export function embeddedAgentLeaseState(current: Lease | null, agent_id: string): AgentLeaseState | null {
  if (current === null) return null;
  return { ...view(current, agent_id), live: current.expires_at !== RELEASED_AT };
}
