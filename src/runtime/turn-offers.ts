import { DomainError, type TurnOffer } from '../domain/index.js';

interface Claim {
  /** The offer as the runtime made it (its `run_id` is the agent's current run). */
  offer: TurnOffer;
  expiresAt: number;
}

interface Waiter {
  agentIds: Set<string> | null;
  resolve: (offer: TurnOffer | null) => void;
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
  private grants = 0;

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

  async claim(agentIds: string[] | null, waitMs: number, signal?: AbortSignal): Promise<TurnOffer | null> {
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
        resolve: (offer) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(offer);
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

  heartbeat(runId: string): string {
    const claim = this.liveClaim(runId);
    claim.expiresAt = this.now().getTime() + claim.offer.lease_ms;
    return new Date(claim.expiresAt).toISOString();
  }

  /** Ends a claim for completion; refused (409) once its lease expired or the run ended. */
  complete(runId: string): TurnOffer {
    const claim = this.liveClaim(runId);
    this.claims.delete(runId);
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
   * Every claim gets its own id (`<run_id>~<n>`), so a worker whose lease expired cannot complete
   * the turn after it was offered again to someone else.
   */
  private grant(offer: TurnOffer): TurnOffer {
    this.grants += 1;
    const claimId = `${offer.run_id}~${this.grants}`;
    this.claims.set(claimId, { offer, expiresAt: this.now().getTime() + offer.lease_ms });
    return { ...offer, run_id: claimId };
  }

  private liveClaim(runId: string): Claim {
    this.reclaimExpired();
    const claim = this.claims.get(runId);
    if (!claim) throw new DomainError('lease_lost', `turn ${runId} is not held: its lease expired or it already ended`);
    return claim;
  }

  private reclaimExpired(): void {
    const now = this.now().getTime();
    for (const [runId, claim] of this.claims) {
      if (claim.expiresAt > now) continue;
      this.claims.delete(runId);
      this.offer(claim.offer);
    }
  }
}
