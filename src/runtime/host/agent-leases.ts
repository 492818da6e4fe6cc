import { performance } from 'node:perf_hooks';
import { DomainError } from '../../domain/index.js';
import type { AgentLease, Store } from '../../store/store.js';
import { KeyedQueue } from './keyed-queue.js';

/** A lease this node holds, and until when it counts it as its own (its monotonic clock, ms). */
interface Held {
  lease: AgentLease;
  until: number;
}

/** What `/readyz` says of this node's membership and leases. */
export interface AgentLeaseReadiness {
  leases_held: number;
  /** The last heartbeat's outcome (`null` before the first) and its age. */
  heartbeat: { ok: boolean | null; age_ms: number | null; error: string | null };
}

export interface AgentLeaseOptions {
  store: Store;
  nodeId: string;
  ttlMs: number;
  /** An agent's lease is gone (another node took it, or its time ran out unrenewed): stop its side effects at once. */
  onLost(agentId: string): void;
}

/**
 * The agent leases of a cluster node (docs/cluster-design.md, steps 2, 3, 8, 9): the node's
 * registration and every lease it holds, renewed together by one timer every third of the TTL
 * (`heartbeatNode` and one `renewAgentLeases` for all). A lease counts as this node's until `ttl`
 * after it *sent* the request that granted or renewed it, on its own monotonic clock (which ends
 * no later than the database's expiry); a lease that would run out before the next beat is given
 * up at once (`onLost`), as is every one the store reports lost. Acquiring and releasing one
 * agent's lease run one after the other, so a release never lands after the next acquisition.
 */
export class AgentLeases {
  private readonly held = new Map<string, Held>();
  private readonly serial = new KeyedQueue();
  private beat: NodeJS.Timeout | null = null;
  private beating: Promise<void> = Promise.resolve();
  private last: { ok: boolean; at: number; error: string | null } | null = null;
  private stopped = false;
  private readonly every: number;
  /** Where the other nodes forward this node's agents' requests (`serve --advertise-url`), once registered. */
  private advertiseUrl: string | null = null;

  constructor(private readonly options: AgentLeaseOptions) {
    this.every = Math.max(50, Math.floor(options.ttlMs / 3));
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  get ttlMs(): number {
    return this.options.ttlMs;
  }

  /** Starts the beat: every third of the TTL, the registration (once registered) and every held lease are renewed. */
  start(): void {
    if (this.beat) return;
    this.last = { ok: true, at: performance.now(), error: null };
    this.beat = setInterval(() => {
      this.beating = this.tick();
    }, this.every);
    this.beat.unref();
  }

  /** Registers the node under `advertiseUrl` (a failure fails it); the beat renews the registration from then on. */
  async register(advertiseUrl: string): Promise<void> {
    await this.options.store.heartbeatNode(this.options.nodeId, advertiseUrl, this.options.ttlMs);
    this.advertiseUrl = advertiseUrl;
    this.last = { ok: true, at: performance.now(), error: null };
  }

  /** Whether this node holds the agent's lease now (on its own clock). */
  holds(agentId: string): boolean {
    const held = this.held.get(agentId);
    return held !== undefined && held.until > performance.now();
  }

  get size(): number {
    return this.held.size;
  }

  heldIds(): string[] {
    return [...this.held.keys()];
  }

  /** The token the agent's commits carry; `lease_lost` (and the agent given up) once it is not held. */
  token(agentId: string): number {
    const held = this.held.get(agentId);
    if (held && held.until > performance.now()) return held.lease.fencing_token;
    if (held) this.lose(agentId);
    throw new DomainError('lease_lost', `this node (${this.options.nodeId}) does not hold the lease of agent ${agentId}`, { agent_id: agentId });
  }

  /** The agent's lease, taken if this node does not hold it; `lease_lost` when another live node does. */
  acquire(agentId: string): Promise<AgentLease> {
    return this.serial.run(agentId, async () => {
      const held = this.held.get(agentId);
      if (held && held.until > performance.now()) return held.lease;
      if (this.stopped) throw new DomainError('runtime_shutting_down', 'the node is shutting down');
      const sent = performance.now();
      const lease = await this.options.store.acquireAgentLease(agentId, this.options.nodeId, this.options.ttlMs);
      this.held.set(agentId, { lease, until: sent + this.options.ttlMs });
      return lease;
    });
  }

  /** A lease `claimDueAgents` granted, requested at `sent` (monotonic ms). */
  install(lease: AgentLease, sent: number): void {
    this.held.set(lease.agent_id, { lease, until: sent + this.options.ttlMs });
  }

  /** Whether the store still names this node and token as the agent's writer (before a side effect no commit fences). */
  async stillHeld(agentId: string): Promise<boolean> {
    const held = this.held.get(agentId);
    if (!held || held.until <= performance.now()) return false;
    const current = await this.options.store.readAgentLease(agentId);
    return current !== null && current.holder === this.options.nodeId && current.fencing_token === held.lease.fencing_token;
  }

  /** Gives the lease back (a passivated agent: its earliest timer's due time goes with it). */
  release(agentId: string, wakeAt: string | null): Promise<void> {
    return this.serial.run(agentId, async () => {
      const held = this.held.get(agentId);
      if (!held) return;
      this.held.delete(agentId);
      await this.options.store.releaseAgentLease(held.lease, wakeAt).catch(() => undefined);
    });
  }

  /** Forgets the agent's lease without a word to the store (it is lost already). */
  forget(agentId: string): void {
    this.held.delete(agentId);
  }

  /** Stops beating, releases every lease still held (`wakeAt` says when each agent needs a node again) and unregisters the node. */
  async stop(wakeAt: (agentId: string) => string | null): Promise<void> {
    this.stopped = true;
    if (this.beat) clearInterval(this.beat);
    await this.beating;
    await Promise.all(this.heldIds().map((agentId) => this.release(agentId, wakeAt(agentId))));
    if (this.advertiseUrl !== null) await this.options.store.removeNode(this.options.nodeId).catch(() => undefined);
  }

  readiness(): AgentLeaseReadiness {
    const last = this.last;
    return {
      leases_held: this.held.size,
      heartbeat: { ok: last?.ok ?? null, age_ms: last ? Math.round(performance.now() - last.at) : null, error: last?.error ?? null },
    };
  }

  /** Whether the last heartbeat reached the store within two beats. */
  get healthy(): boolean {
    return this.last !== null && this.last.ok && performance.now() - this.last.at < 2 * this.every + 1_000;
  }

  private lose(agentId: string): void {
    if (!this.held.delete(agentId)) return;
    this.options.onLost(agentId);
  }

  private async tick(): Promise<void> {
    const sent = performance.now();
    const { store, nodeId, ttlMs } = this.options;
    try {
      if (this.advertiseUrl !== null) await store.heartbeatNode(nodeId, this.advertiseUrl, ttlMs);
      const leases = [...this.held.values()].map(({ lease }) => ({ agent_id: lease.agent_id, fencing_token: lease.fencing_token }));
      if (leases.length > 0) {
        const { renewed, lost } = await store.renewAgentLeases(nodeId, leases, ttlMs);
        for (const lease of renewed) {
          const held = this.held.get(lease.agent_id);
          if (held && held.lease.fencing_token === lease.fencing_token) this.held.set(lease.agent_id, { lease, until: sent + ttlMs });
        }
        for (const agentId of lost) {
          const held = this.held.get(agentId);
          // Released or re-acquired meanwhile: only the token that was sent is lost.
          if (held && leases.some((l) => l.agent_id === agentId && l.fencing_token === held.lease.fencing_token)) this.lose(agentId);
        }
      }
      this.last = { ok: true, at: performance.now(), error: null };
    } catch (error) {
      this.last = { ok: false, at: performance.now(), error: error instanceof Error ? error.message : String(error) };
    }
    // A lease that would run out before the next beat is given up now, before the database's expiry.
    const horizon = performance.now() + this.every;
    for (const [agentId, held] of this.held) if (held.until <= horizon) this.lose(agentId);
  }
}
