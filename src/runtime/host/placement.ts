import type { AgentListEntry } from '../../domain/index.js';
import type { CommitFence, Store } from '../../store/store.js';
import { rosterOf } from '../agent/roster.js';
import type { AgentRoute, Page, RouteOptions } from '../api.js';
import { hashToken } from '../capability.js';
import type { Clock } from '../clock.js';
import type { AgentCell } from '../agent/agent-cell.js';
import { ClusterNode, type ClusterParts } from './cluster-node.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { ResidentRoster, RosterFilter } from './resident-roster.js';
import { listingFromStore } from './store-listing.js';

type CommandLease = Pick<LeaseKeeper, 'isLost' | 'stillHeld' | 'markLost'>;

/** What a boot does, given by the runtime (its recovery is a flow). */
export interface PlacementBoot {
  /** Every agent recovered (the store lease's holder runs them all; a cluster node loads nothing at boot). */
  recoverAll(): Promise<void>;
  leaseWaitMs: number;
  onLeaseWait?: ((wait: { wait_ms: number; reason: string }) => void) | undefined;
  /** A cluster node registers under this address once given (`serve` knows it once listening). */
  advertiseUrl?: string | undefined;
}

/**
 * How this instance holds its agents, as the hooks the runtime's parts call: one store-wide
 * lease for all of them (an embedded store: `LeaseKeeper`), or one lease per agent (a cluster
 * node on PostgreSQL: `ClusterNode`, docs/cluster-design.md). The facade wires these and never
 * asks which it is.
 */
export interface Placement {
  /** The cluster node, or `null` with an embedded store. */
  readonly cluster: ClusterNode | null;
  /** The fencing token the agent's snapshots are stamped with. */
  token(agentId: string): number;
  /** The fence of the agent's commits. */
  fence(agentId: string): CommitFence;
  /** A commit of the agent was fenced (`lease_lost`). */
  fenced(agentId: string): void;
  /** The token a create writes under (0 in a cluster: the new agent's own lease fences it). */
  writable(): number;
  /** In a cluster: a create key's agent lease, taken before the key is written. */
  readonly keyLease: ((agentId: string) => Promise<number>) | undefined;
  /** What `TaskProcesses` asks before it starts a command. */
  readonly commandLease: CommandLease;
  /** In a cluster: take the agent's lease before a load, and give it back when no such agent exists. */
  readonly take: ((agentId: string) => Promise<void>) | undefined;
  readonly untake: ((agentId: string) => void) | undefined;
  /** The cell retired: in a cluster its lease goes back with its next wake time. */
  retired(cell: AgentCell): void;
  /** Whether the agent's timers may fire here. */
  mayFire(agentId: string): boolean;
  /** Where a request for the agent is served (`closing`: this instance is stopping, so here, to be refused). */
  route(agentId: string, closing: boolean, options: RouteOptions): Promise<AgentRoute>;
  /** The agent a capability token belongs to. */
  callbackAgent(token: string): Promise<string | null>;
  /** `ListAgents`: from the resident roster, or (a cluster node) from the store. */
  listAgents(after: string | undefined, limit: number, filter: RosterFilter): Promise<Page<AgentListEntry>>;
  /** The advertised addresses of the other live nodes (none with the store lease). */
  peers(): Promise<string[]>;
  /** After `store.open()`: the store lease taken (the store closed if it cannot be) and every agent recovered, or the cluster node started. */
  boot(boot: PlacementBoot): Promise<void>;
  /** Every agent given back: the store lease released, or each agent lease with when it needs a node again. */
  close(): Promise<void>;
}

export interface PlacementOptions {
  store: Store;
  nodeId: string;
  ttlMs: number;
  clock: Clock;
  lease: LeaseKeeper;
  roster: Pick<ResidentRoster, 'agentForTokenHash' | 'listing' | 'forget'>;
  /** The runtime's parts, read when first needed (they are built after this). */
  parts(): ClusterParts;
}

/** A cluster node when the store is PostgreSQL, else the store lease. */
export function placementFor(options: PlacementOptions): Placement {
  return options.store.kind === 'postgres' ? clusterPlacement(options) : storeLeasePlacement(options.lease, options.roster, options.store);
}

function storeLeasePlacement(lease: LeaseKeeper, roster: PlacementOptions['roster'], store: Store): Placement {
  return {
    cluster: null,
    token: () => lease.fencingToken(),
    fence: () => ({ fencing_token: lease.fencingToken() }),
    fenced: () => lease.markLost(),
    writable: () => lease.fencingToken(),
    keyLease: undefined,
    commandLease: lease,
    take: undefined,
    untake: undefined,
    retired: () => undefined,
    mayFire: () => !lease.isLost,
    route: async () => ({ kind: 'local' }),
    callbackAgent: async (token) => roster.agentForTokenHash(hashToken(token)) ?? null,
    listAgents: async (after, limit, filter) => roster.listing(after, limit, filter),
    peers: async () => [],
    boot: async (boot) => {
      try {
        await lease.acquire(boot.leaseWaitMs, boot.onLeaseWait);
      } catch (error) {
        await store.close();
        throw error;
      }
      await boot.recoverAll();
    },
    close: () => lease.release(),
  };
}

function clusterPlacement(options: PlacementOptions): Placement {
  const { store, nodeId, ttlMs, clock, parts, roster } = options;
  const cluster = new ClusterNode({ store, nodeId, ttlMs, clock, parts });
  return {
    cluster,
    token: (agentId) => cluster.leases.token(agentId),
    fence: (agentId) => cluster.fence(agentId),
    fenced: (agentId) => cluster.lost(agentId),
    writable: () => 0,
    keyLease: (agentId) => cluster.leases.acquire(agentId).then((l) => l.fencing_token),
    commandLease: cluster.agentLease,
    take: (agentId) => cluster.take(agentId),
    untake: (agentId) => void cluster.leases.release(agentId, null),
    retired: (cell) => {
      // Passivated: no lease; `claimDueAgents` brings it back at its next timer, a request earlier.
      parts().alarms.disarmAgent(cell.id);
      roster.forget(cell.id);
      void cluster.leases.release(cell.id, rosterOf(cell.doc).next_timer_at ?? null);
    },
    mayFire: (agentId) => cluster.leases.holds(agentId),
    route: (agentId, closing, options) => (closing ? Promise.resolve({ kind: 'local' }) : cluster.route(agentId, options)),
    callbackAgent: (token) => cluster.callbackAgent(token),
    listAgents: (after, limit, filter) => listingFromStore(store, after, limit, filter),
    peers: async () => (await store.listLiveNodes()).filter((n) => n.node_id !== nodeId).map((n) => n.advertise_url),
    boot: async (boot) => {
      cluster.start();
      if (boot.advertiseUrl !== undefined) await cluster.register(boot.advertiseUrl);
    },
    close: () => cluster.close(),
  };
}
