import { DomainError } from '../../domain/index.js';
import type { Lease, Store } from '../../store/store.js';
import type { Clock } from '../clock.js';

/** What `/readyz` says of the lease. */
export interface LeaseReadiness {
  storeOk: boolean;
  held: boolean;
  holder: string | null;
  expires_at: string | null;
  fencing_token: number;
}

/**
 * The runtime's write lease (seed 002 invariant 2): taken at open, renewed every third of its
 * time to live, released at close. Once a renewal fails (or a commit is fenced) the lease counts
 * as lost for good: every fencing token asked for throws `lease_lost`, and the listeners stop
 * this instance's side effects.
 */
export class LeaseKeeper {
  private lease: Lease | null = null;
  private lost = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly lostListeners: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    readonly nodeId: string,
    private readonly ttlMs: number,
    private readonly clock: Clock,
  ) {}

  /**
   * Takes the lease, waiting up to `waitMs` for one held by someone else (a restarted process
   * finds its predecessor's still unexpired), then starts renewing it.
   */
  async acquire(waitMs: number, onWait?: (wait: { wait_ms: number; reason: string }) => void): Promise<void> {
    const deadline = Date.now() + waitMs;
    let toldWaiting = false;
    for (;;) {
      try {
        this.lease = await this.store.acquireLease(this.nodeId, this.ttlMs, this.clock.now());
        break;
      } catch (error) {
        const waiting = error instanceof DomainError && error.code === 'lease_lost' && Date.now() < deadline;
        if (!waiting) throw error;
        if (!toldWaiting) onWait?.({ wait_ms: waitMs, reason: error.message });
        toldWaiting = true;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    const every = Math.max(50, Math.floor(this.ttlMs / 3));
    this.heartbeat = setInterval(() => void this.renew(), every);
    this.heartbeat.unref();
  }

  get isLost(): boolean {
    return this.lost;
  }

  /** The token every commit carries; throws `lease_lost` once the lease is gone, so nothing is written. */
  fencingToken(): number {
    if (this.lost || !this.lease) throw new DomainError('lease_lost', 'this runtime no longer holds the write lease');
    return this.lease.fencing_token;
  }

  /** Runs `listener` once, when the lease is lost. */
  onLost(listener: () => void): void {
    this.lostListeners.push(listener);
  }

  /** Seed 002: once renewal fails, no more external side effects from this instance (the store lease covers every agent: `_agentId` is who found out). */
  markLost(_agentId?: string): void {
    if (this.lost) return;
    this.lost = true;
    for (const listener of this.lostListeners) listener();
  }

  /**
   * Whether the store still names this lease (its holder and fencing token) as the write lease. A
   * commit is fenced by the store itself; this is for a side effect that happens before any commit
   * could fence it (starting a command), so that an instance another one took over from learns it
   * before it acts, not after. Expiry alone does not count: the store has no clock, and an expired
   * lease nobody took is still this holder's to renew.
   */
  async stillHeld(_agentId?: string): Promise<boolean> {
    if (!this.lease) return false;
    const current = await this.store.readLease();
    return current !== null && current.holder === this.lease.holder && current.fencing_token === this.lease.fencing_token;
  }

  async readiness(): Promise<LeaseReadiness> {
    let storeOk = true;
    let lease: Lease | null = null;
    try {
      lease = await this.store.readLease();
    } catch {
      storeOk = false;
    }
    const held = !this.lost && lease !== null && lease.holder === this.nodeId && Date.parse(lease.expires_at) > this.clock.now().getTime();
    return { storeOk, held, holder: lease?.holder ?? null, expires_at: lease?.expires_at ?? null, fencing_token: lease?.fencing_token ?? 0 };
  }

  /** Stops renewing and gives the lease back (if still held). */
  async release(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.lease && !this.lost) await this.store.releaseLease(this.lease).catch(() => undefined);
  }

  private async renew(): Promise<void> {
    if (!this.lease || this.lost) return;
    try {
      this.lease = await this.store.renewLease(this.lease, this.ttlMs, this.clock.now());
    } catch {
      this.markLost();
    }
  }
}
