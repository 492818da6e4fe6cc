import { DomainError, type TurnClaim, type TurnOffer } from '../domain/index.js';
import { newId } from './clock.js';

interface Claim {
  /** The offer as the runtime made it (its `run_id` is the agent's current run). */
  offer: TurnOffer;
  expiresAt: number;
}

interface Waiter {
  agentIds: Set<string> | null;
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
  private closed = false;

  constructor(private readonly now: () => Date) {}

  offer(offer: TurnOffer): void {
    for (const waiter of this.waiters) {
      if (waiter.agentIds && !waiter.agentIds.has(offer.agent_id)) continue;
      this.waiters.delete(waiter);
      waiter.resolve(this.grant(offer));
      return;
    }
    this.open.push(offer);
  }

  async claim(agentIds: string[] | null, waitMs: number, signal?: AbortSignal): Promise<TurnClaim | null> {
    this.reclaimExpired();
    const wanted = agentIds ? new Set(agentIds) : null;
    const index = this.open.findIndex((o) => !wanted || wanted.has(o.agent_id));
    if (index >= 0) {
      const [offer] = this.open.splice(index, 1) as [TurnOffer];
      return this.grant(offer);
    }
    if (waitMs <= 0 || this.closed) return null;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        agentIds: wanted,
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

  heartbeat(runId: string, claimId: string): string {
    const claim = this.liveClaim(runId, claimId);
    claim.expiresAt = this.now().getTime() + claim.offer.lease_ms;
    return new Date(claim.expiresAt).toISOString();
  }

  /** Ends a claim for completion; refused (409) once its lease expired, the turn was offered again or the run ended. */
  complete(runId: string, claimId: string): TurnOffer {
    const claim = this.liveClaim(runId, claimId);
    this.claims.delete(claimId);
    return claim.offer;
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
  private grant(offer: TurnOffer): TurnClaim {
    const claimId = newId('claim');
    this.claims.set(claimId, { offer, expiresAt: this.now().getTime() + offer.lease_ms });
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
