import { DomainError } from '../../domain/index.js';
import type { CommitFence, Store } from '../../store/store.js';
import type { AgentRoute } from '../api.js';
import { AgentLeases, type AgentLeaseReadiness } from './agent-leases.js';
import { ClaimLoop } from './claim-loop.js';

export interface ClusterNodeOptions {
  store: Store;
  nodeId: string;
  ttlMs: number;
  /** Loads the agent (taking its lease first); `null` when there is no such agent. */
  load(agentId: string): Promise<unknown>;
  /** The agent's lease is gone: stop its side effects and drop its cell. */
  lost(agentId: string): void;
  /** The roster entries again from the store (another node's commits), for a capability URL this node does not know. */
  refreshRoster(): Promise<void>;
  onClaimError?(error: unknown): void;
}

/** How often at most a capability URL this node does not know makes it read the roster again. */
const ROSTER_REFRESH_MS = 1_000;

/**
 * One node of a cluster on PostgreSQL (`store.kind === 'postgres'`, docs/cluster-design.md): no
 * store-wide lease; the node registers itself and holds one lease per agent it runs
 * (`AgentLeases`), claims the agents nobody runs (`ClaimLoop`), and says where a request for an
 * agent is served (`route`).
 */
export class ClusterNode {
  readonly leases: AgentLeases;
  private readonly claims: ClaimLoop;
  private rosterRead: { at: number; done: Promise<void> } | null = null;

  constructor(private readonly options: ClusterNodeOptions) {
    this.leases = new AgentLeases({ store: options.store, nodeId: options.nodeId, ttlMs: options.ttlMs, onLost: (agentId) => options.lost(agentId) });
    this.claims = new ClaimLoop({
      store: options.store,
      leases: this.leases,
      take: async (agentId) => {
        await options.load(agentId);
      },
      ...(options.onClaimError ? { onError: options.onClaimError } : {}),
    });
  }

  /** Registered under `advertiseUrl`: the node is ready; the claim loop starts. */
  async open(advertiseUrl: string): Promise<void> {
    await this.leases.start(advertiseUrl);
    this.claims.start();
  }

  /** The fence of the agent's commits: its lease's token (`lease_lost` once this node does not hold it). */
  fence(agentId: string): CommitFence {
    return { agent_fencing_token: this.leases.token(agentId) };
  }

  take(agentId: string): Promise<void> {
    return this.leases.acquire(agentId).then(() => undefined);
  }

  /**
   * Local when this node holds the agent or can take it (loading it takes its lease); otherwise
   * the live holder's address, or `unavailable` when that holder is not a registered node.
   */
  async route(agentId: string): Promise<AgentRoute> {
    if (this.leases.holds(agentId)) return { kind: 'local' };
    try {
      await this.options.load(agentId);
      return { kind: 'local' };
    } catch (error) {
      if (!(error instanceof DomainError && error.code === 'lease_lost')) return { kind: 'local' };
    }
    const where = await this.options.store.locateAgent(agentId);
    if (where === null || where.holder === this.options.nodeId) return { kind: 'local' };
    return where.advertise_url === null ? { kind: 'unavailable', holder: where.holder } : { kind: 'forward', holder: where.holder, url: where.advertise_url };
  }

  /** Reads the roster entries again, at most once a second (a capability URL minted through another node). */
  refreshRoster(): Promise<void> {
    const now = Date.now();
    if (this.rosterRead && now - this.rosterRead.at < ROSTER_REFRESH_MS) return this.rosterRead.done;
    const done = this.options.refreshRoster().catch(() => undefined);
    this.rosterRead = { at: now, done };
    return done;
  }

  /** Stops claiming, releases every lease (with when each agent needs a node again) and unregisters. */
  async close(wakeAt: (agentId: string) => string | null): Promise<void> {
    await this.claims.stop();
    await this.leases.stop(wakeAt);
  }

  readiness(): AgentLeaseReadiness & { healthy: boolean } {
    return { ...this.leases.readiness(), healthy: this.leases.healthy };
  }
}
