import { DomainError, type IdempotencyClaim, type TurnClaim, type TurnOffer } from '../../domain/index.js';
import { newId } from '../clock.js';

interface Claim {
  /** The offer as the runtime made it (its `run_id` is the agent's current run). */
  offer: TurnOffer;
  expiresAt: number;
  /** The Idempotency-Key of the claim request that got it, if any: a retry of that request gets it again. */
  key?: IdempotencyClaim;
}

/** How many completed claims are remembered, so that a retried completion finds its agent. */
const COMPLETED_KEPT = 1024;

interface Waiter {
  agentIds: Set<string> | null;
  key?: IdempotencyClaim;
  resolve: (claim: TurnClaim | null) => void;
}

/**
 * Turns of `http_worker` agents, offered to HTTP clients like a task queue. A claim holds a
 * lease; an expired lease puts the turn back on offer, and a completion after that is refused.
 */
export class TurnOffers {
  private readonly open: TurnOffer[] = [];
  private readonly claims = new Map<string, Claim>();
  private readonly waiters = new Set<Waiter>();
  /** Completed claims, oldest first: claim id → agent id. */
  private readonly completed = new Map<string, { runId: string; agentId: string }>();
  private closed = false;

  constructor(private readonly now: () => Date) {}

  offer(offer: TurnOffer): void {
    for (const waiter of this.waiters) {
      if (waiter.agentIds && !waiter.agentIds.has(offer.agent_id)) continue;
      this.waiters.delete(waiter);
      waiter.resolve(this.grant(offer, waiter.key));
      return;
    }
    this.open.push(offer);
  }

  /**
   * A turn for one of `agentIds` (any agent without), waiting up to `waitMs` for one. A retry of a
   * claim request with the same Idempotency-Key gets the claim it got, while that claim is held.
   */
  async claim(agentIds: string[] | null, waitMs: number, signal?: AbortSignal, idempotency?: IdempotencyClaim & { replayed?: boolean }): Promise<TurnClaim | null> {
    this.reclaimExpired();
    if (idempotency) {
      for (const [claimId, claim] of this.claims) {
        if (claim.key?.key !== idempotency.key) continue;
        if (claim.key.fingerprint !== idempotency.fingerprint) throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another request');
        idempotency.replayed = true;
        return { ...claim.offer, claim_id: claimId };
      }
    }
    const wanted = agentIds ? new Set(agentIds) : null;
    const index = this.open.findIndex((o) => !wanted || wanted.has(o.agent_id));
    if (index >= 0) {
      const [offer] = this.open.splice(index, 1) as [TurnOffer];
      return this.grant(offer, idempotency);
    }
    if (waitMs <= 0 || this.closed) return null;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        agentIds: wanted,
        ...(idempotency ? { key: idempotency } : {}),
        resolve: (claim) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(claim);
        },
      };
      const onAbort = () => {
        this.waiters.delete(waiter);
        waiter.resolve(null);
      };
      const timer = setTimeout(onAbort, waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** The agent of the turn `runId` held under `claimId`; refused (409 `lease_lost`) like a heartbeat. */
  heartbeatAgent(runId: string, claimId: string): string {
    return this.liveClaim(runId, claimId).offer.agent_id;
  }

  /** Messages that joined the run `runId` at a safe point: its offer (held or open again) carries them from now on. */
  append(runId: string, messages: readonly TurnOffer['messages'][number][]): void {
    for (const claim of this.claims.values()) if (claim.offer.run_id === runId) claim.offer.messages = [...claim.offer.messages, ...messages];
    for (const offer of this.open) if (offer.run_id === runId) offer.messages = [...offer.messages, ...messages];
  }

  /** Every message of the run `runId` so far, as its claim `claimId` holds them; refused like a heartbeat. */
  messagesOf(runId: string, claimId: string): TurnOffer['messages'] {
    return this.liveClaim(runId, claimId).offer.messages;
  }

  heartbeat(runId: string, claimId: string): string {
    const claim = this.liveClaim(runId, claimId);
    claim.expiresAt = this.now().getTime() + claim.offer.lease_ms;
    return new Date(claim.expiresAt).toISOString();
  }

  /** Ends a claim for completion; refused (409) once its lease expired, the turn was offered again or the run ended. */
  complete(runId: string, claimId: string): TurnOffer {
    const claim = this.liveClaim(runId, claimId);
    this.claims.delete(claimId);
    this.completed.set(claimId, { runId, agentId: claim.offer.agent_id });
    for (const oldest of this.completed.keys()) {
      if (this.completed.size <= COMPLETED_KEPT) break;
      this.completed.delete(oldest);
    }
    return claim.offer;
  }

  /** The agent of the turn `runId` if `claimId` completed it (recently), else null. */
  completedBy(runId: string, claimId: string): string | null {
    const done = this.completed.get(claimId);
    return done?.runId === runId ? done.agentId : null;
  }

  cancel(runId: string): void {
    for (const [claimId, claim] of this.claims) if (claim.offer.run_id === runId) this.claims.delete(claimId);
    const index = this.open.findIndex((o) => o.run_id === runId);
    if (index >= 0) this.open.splice(index, 1);
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiters) waiter.resolve(null);
    this.waiters.clear();
  }

  /**
   * Every claim gets its own id, so a worker whose lease expired cannot heartbeat or complete the
   * turn after it was offered again to someone else; the run keeps its one id.
   */
  private grant(offer: TurnOffer, key?: IdempotencyClaim): TurnClaim {
    const claimId = newId('claim');
    this.claims.set(claimId, { offer, expiresAt: this.now().getTime() + offer.lease_ms, ...(key ? { key: { key: key.key, fingerprint: key.fingerprint } } : {}) });
    return { ...offer, claim_id: claimId };
  }

  private liveClaim(runId: string, claimId: string): Claim {
    this.reclaimExpired();
    const claim = this.claims.get(claimId);
    if (!claim || claim.offer.run_id !== runId) {
      throw new DomainError('lease_lost', `turn ${runId} is not held under claim ${claimId}: its lease expired, it was offered again, or it ended`);
    }
    return claim;
  }

  private reclaimExpired(): void {
    const now = this.now().getTime();
    for (const [claimId, claim] of this.claims) {
      if (claim.expiresAt > now) continue;
      this.claims.delete(claimId);
      this.offer(claim.offer);
    }
  }
}
