import { DomainError } from '../../domain/index.js';
import type { AgentLocation, CommitFence, Store } from '../../store/store.js';
import { compactHash, needsRecovery, rosterOf } from '../agent/roster.js';
import type { AgentRoute, RouteOptions } from '../api.js';
import { hashToken } from '../capability.js';
import type { Clock } from '../clock.js';
import { AgentLeases, type AgentLeaseReadiness } from './agent-leases.js';
import type { TimerAlarms } from './alarms.js';
import type { AgentCells } from './cells.js';
import { ClaimLoop } from './claim-loop.js';
import type { CommandProcesses } from './processes.js';
import type { ResidentRoster } from './resident-roster.js';
import { RouteCache } from './route-cache.js';
import type { ShardPool } from './shards.js';

/** The runtime's parts a cluster node acts on when it gains or loses an agent. */
export interface ClusterParts {
  cells: Pick<AgentCells, 'get' | 'load' | 'drop'>;
  alarms: Pick<TimerAlarms, 'disarmAgent'>;
  /** The turns (a flow: given as the one call this needs). */
  turns: { abortRun(runId: string): void };
  processes: Pick<CommandProcesses, 'abandonAgent'>;
  shards: Pick<ShardPool, 'forget'>;
  roster: Pick<ResidentRoster, 'agentForTokenHash' | 'forget'>;
}

export interface ClusterNodeOptions {
  store: Store;
  nodeId: string;
  ttlMs: number;
  clock: Clock;
  /** The runtime's parts, read when first needed (they are built after this node). */
  parts(): ClusterParts;
  onClaimError?(error: unknown): void;
}

/** Agents held elsewhere whose route a node remembers at most (the oldest go first). */
const ROUTES_REMEMBERED = 10_000;

/**
 * One node of a cluster on PostgreSQL (`store.kind === 'postgres'`, docs/cluster-design.md): no
 * store-wide lease; the node registers itself and holds one lease per agent it runs
 * (`AgentLeases`), claims the agents nobody runs (`ClaimLoop`), and says where a request for an
 * agent is served (`route`).
 */
export class ClusterNode {
  readonly leases: AgentLeases;
  private readonly claims: ClaimLoop;
  /** Where the agents other live nodes hold are served, as last read (`route`). */
  private readonly routes: RouteCache;

  constructor(private readonly options: ClusterNodeOptions) {
    this.routes = new RouteCache({ maxAgeMs: options.ttlMs / 4, maxEntries: ROUTES_REMEMBERED });
    this.leases = new AgentLeases({ store: options.store, nodeId: options.nodeId, ttlMs: options.ttlMs, onLost: (agentId) => this.lost(agentId) });
    this.claims = new ClaimLoop({
      store: options.store,
      leases: this.leases,
      take: async (agentId) => {
        await options.parts().cells.load(agentId);
      },
      ...(options.onClaimError ? { onError: options.onClaimError } : {}),
    });
  }

  /** Renews the leases it takes and claims the agents nobody runs, from now on. */
  start(): void {
    this.leases.start();
    this.claims.start();
  }

  /** Registered under `advertiseUrl`, the other nodes forward this node's agents' requests to it. */
  register(advertiseUrl: string): Promise<void> {
    return this.leases.register(advertiseUrl);
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
   * the live holder's address, or `unavailable` when that holder is not a registered node. An
   * agent another live node holds is looked up first (`locateAgent`, reads only): a lease attempt
   * on it would wait for the holder's commit batch on the lease row and flush a transaction of its
   * own. That holder's address is remembered (`RouteCache`) for a quarter of the lease TTL since
   * it was read or the holder last served a request forwarded under it (`confirmRoute`), or until
   * a `fresh` route replaces it, so a request forwarded there costs no round trip. A
   * remembered route only ever forwards: serving here always takes the agent's lease.
   */
  async route(agentId: string, options: RouteOptions = {}): Promise<AgentRoute> {
    if (this.leases.holds(agentId)) {
      this.routes.delete(agentId);
      return { kind: 'local' };
    }
    const cached = options.fresh === true ? undefined : this.routes.get(agentId);
    if (cached !== undefined) return { kind: 'forward', holder: cached.holder, url: cached.url };
    const where = await this.options.store.locateAgent(agentId);
    if (where !== null && where.holder !== this.options.nodeId) return this.remember(agentId, where);
    // Nobody live holds it (or this node does, from an earlier run under its id): take it.
    this.routes.delete(agentId);
    try {
      await this.options.parts().cells.load(agentId);
      return { kind: 'local' };
    } catch (error) {
      if (!(error instanceof DomainError && error.code === 'lease_lost')) return { kind: 'local' };
    }
    // Another node took it meanwhile.
    const now = await this.options.store.locateAgent(agentId);
    if (now === null || now.holder === this.options.nodeId) return { kind: 'local' };
    return this.remember(agentId, now);
  }

  /** The holder served a request forwarded under a remembered route: it held the lease then, so the route is remembered afresh. */
  confirmRoute(agentId: string, holder: string, url: string): void {
    this.routes.confirm(agentId, { holder, url });
  }

  private remember(agentId: string, where: AgentLocation): AgentRoute {
    if (where.advertise_url === null) {
      this.routes.delete(agentId);
      return { kind: 'unavailable', holder: where.holder };
    }
    this.routes.set(agentId, { holder: where.holder, url: where.advertise_url });
    return { kind: 'forward', holder: where.holder, url: where.advertise_url };
  }

  /**
   * Seed 002 acceptance #2, per agent: another node holds the agent's lease now (a renewal
   * reported it, a commit was fenced, or its time ran out unrenewed): its alarms, its run and its
   * command processes stop at once, and its cell goes. Its commits are refused by the database anyway.
   */
  lost(agentId: string): void {
    const { cells, alarms, turns, processes, shards, roster } = this.options.parts();
    const runId = cells.get(agentId)?.head.state.current_run_id;
    this.leases.forget(agentId);
    alarms.disarmAgent(agentId);
    if (runId) turns.abortRun(runId);
    processes.abandonAgent(agentId);
    cells.drop(agentId);
    shards.forget(agentId);
    roster.forget(agentId);
  }

  /** What `TaskProcesses` asks before it starts a command: the agent's lease, not the store's. */
  readonly agentLease = {
    isLost: false,
    stillHeld: (agentId?: string): Promise<boolean> => this.leases.stillHeld(agentId ?? ''),
    markLost: (agentId?: string): void => {
      if (agentId !== undefined) this.lost(agentId);
    },
  };

  /**
   * The agent of a capability token: one this node runs from its resident entries, any other from
   * the store's index of the latest committed entries (whichever node committed them).
   */
  async callbackAgent(token: string): Promise<string | null> {
    const hash = hashToken(token);
    const known = this.options.parts().roster.agentForTokenHash(hash);
    if (known !== undefined && this.leases.holds(known)) return known;
    return this.options.store.agentForTriggerHash(compactHash(hash));
  }

  /**
   * Stops claiming, releases every lease and unregisters. Each agent goes back with when it needs
   * a node again: now for one with work in doubt (a claim recovers it), else its next timer.
   */
  async close(): Promise<void> {
    await this.claims.stop();
    await this.leases.stop((agentId) => {
      const cell = this.options.parts().cells.get(agentId);
      if (!cell) return null;
      return needsRecovery(cell.doc) ? this.options.clock.now().toISOString() : (rosterOf(cell.doc).next_timer_at ?? null);
    });
  }

  readiness(): AgentLeaseReadiness & { healthy: boolean } {
    return { ...this.leases.readiness(), healthy: this.leases.healthy };
  }
}
