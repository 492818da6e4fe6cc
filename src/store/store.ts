import type { AgentEvent, EventType } from '../domain/index.js';

/** The write lease on a data directory (seed 002: at most one instance may write). */
export interface Lease {
  /** Must be unique per store instance (e.g. host:pid:random): holders with the same name share a token. */
  holder: string;
  /**
   * Increases with every acquisition by a different holder (never reused, also across processes);
   * the same holder re-acquiring keeps its token. Commits carry it as a fence.
   */
  fencing_token: number;
  acquired_at: string;
  expires_at: string;
}

/**
 * The lease that makes one holder (node) the only writer of one agent. Its expiry is taken from
 * the store's clock (PostgreSQL: the database's; the embedded stores: see `src/store/README.md`),
 * never from the caller's: a holder counts its remaining time as `ttl_ms` from when it sent the
 * request, on its own monotonic clock, which ends no later than the store's expiry.
 */
export interface AgentLease {
  agent_id: string;
  holder: string;
  /**
   * Per agent: increases with every acquisition by a different holder (never reused); the same
   * holder re-acquiring keeps it. Commits for the agent carry it as `agent_fencing_token`.
   */
  fencing_token: number;
  acquired_at: string;
  expires_at: string;
}

/** `readAgentLease`: the lease row and whether it is live on the store's clock now. */
export interface AgentLeaseState extends AgentLease {
  live: boolean;
}

/** One lease a holder renews: the agent and the token it holds. */
export interface HeldAgentLease {
  agent_id: string;
  fencing_token: number;
}

export interface RenewedAgentLeases {
  /** The leases still this holder's, with their new expiry. */
  renewed: AgentLease[];
  /** Agents whose lease another holder took (or that have none): stop their side effects at once. */
  lost: string[];
}

/**
 * A node of a cluster as the nodes registry keeps it: its id (the holder name of its leases), the
 * address other nodes forward requests to, and its heartbeat, with times from the store's clock
 * (PostgreSQL: the database's).
 */
export interface NodeRecord {
  node_id: string;
  /** `http(s)://host:port` the other nodes reach this one at (`serve --advertise-url`). */
  advertise_url: string;
  /** When this node id registered, since it was last removed or expired. */
  started_at: string;
  heartbeat_at: string;
  /** The node counts as live until then; it renews by heartbeating again. */
  expires_at: string;
}

/** `locateAgent`: who writes the agent now, and where to forward its requests. */
export interface AgentLocation {
  agent_id: string;
  holder: string;
  fencing_token: number;
  expires_at: string;
  /** The holder's advertised address, `null` when the holder is no live registered node. */
  advertise_url: string | null;
}

/** An agent's authoritative records as the store keeps them: an opaque document plus its version. */
export interface StoredAgent {
  /** Incremented by every commit; the compare-and-set fence for `commit`. */
  version: number;
  doc: unknown;
  /** Highest `event_seq` committed for this agent (0 when none). */
  last_event_seq: number;
}

/** An agent as `listRoster` gives it: its latest roster entry, without its document. */
export interface RosterEntry {
  agent_id: string;
  /** The agent's current version. */
  version: number;
  roster: unknown;
}

/** A page of roster entries (`listRosterPage`), in id order. */
export interface RosterQuery {
  /** Entries of ids strictly after this one (the previous page's last id); from the first without it. */
  after?: string | undefined;
  /** At most this many entries (1 or more). */
  limit: number;
  /** Only ids containing this, in any case. */
  id_contains?: string | undefined;
  /** Only entries whose JSON text contains this: a prefilter, the caller checks the parsed entry. */
  roster_contains?: string | undefined;
}

export interface RosterPage {
  entries: RosterEntry[];
  /** More entries match after the last one given. */
  more: boolean;
}

export interface NewEvent {
  type: EventType;
  payload: Record<string, unknown>;
  /** ISO time; the runtime's clock decides, the store never reads one. */
  ts: string;
}

interface CommitFields {
  agent_id: string;
  /** The version the caller read; `null` creates the agent and fails if it exists. */
  expected_version: number | null;
  /**
   * The whole new document (documents are small: per agent, pruned by the runtime). The store owns
   * `doc` after commit; the caller must not mutate it or any object in it (the next document may
   * share them: the lowdb store reuses their JSON by identity).
   */
  doc: unknown;
  /** Appended to the agent's event log with dense, consecutive `event_seq` values. */
  events: NewEvent[];
  /**
   * A small JSON record about the agent that the runtime needs without loading its document
   * (boot, trigger lookup, listing), stored atomically with the commit. Omitted: the previous
   * entry stays. The store never interprets it.
   */
  roster?: unknown;
}

/**
 * Fenced by the store-wide lease: anything but the current lease's token (an older one, or one
 * never issued), or no lease at all, is refused with `lease_lost` and nothing is written.
 */
interface StoreFenced {
  fencing_token: number;
  agent_fencing_token?: undefined;
}

/**
 * Fenced by the agent's own lease (`acquireAgentLease`): anything but the token of the agent's
 * current lease, or no lease for the agent, is refused with `lease_lost`, checked in the same
 * transaction as the write, and nothing is written.
 */
interface AgentFenced {
  agent_fencing_token: number;
  fencing_token?: undefined;
}

/** The fence of a commit: the store-wide lease's token, or the agent lease's. */
export type CommitFence = StoreFenced | AgentFenced;

/** A commit carries exactly one fence: the store-wide lease's token or the agent lease's. */
export type Commit = CommitFields & CommitFence;

export interface CommitResult {
  version: number;
  events: AgentEvent[];
}

export interface EventPageQuery {
  /** Exclusive lower bound. */
  after_seq?: number;
  /** Exclusive upper bound. */
  before_seq?: number;
  limit: number;
  order: 'asc' | 'desc';
}

export interface EventPage {
  events: AgentEvent[];
  /** Oldest and newest `event_seq` retained for the agent (0 when the log is empty). */
  oldest_seq: number;
  newest_seq: number;
}

/**
 * The storage port. Implementations: `lowdb/` (embedded default, one writer process per data
 * directory), `postgres/` (several nodes on one database) and `memory/` (tests, benchmarks).
 * Every implementation passes `test/store/contract.ts`.
 *
 * Errors are `DomainError`s: `version_conflict` (stale `expected_version` or create of an existing
 * agent), `lease_lost` (lease held by another holder, or a commit fenced by a newer token),
 * `store_unavailable` (I/O failure).
 */
export interface Store {
  readonly kind: 'lowdb' | 'memory' | 'postgres';
  /** Human-readable location (the data directory) for logs and `/handshake`. */
  readonly location: string;

  open(): Promise<void>;
  /** Flushes pending writes and releases file handles; does not release the lease. */
  close(): Promise<void>;

  /**
   * Takes the lease if it is free, expired at `now`, or already this holder's; otherwise fails
   * with `lease_lost`. The store has no clock: expiry only matters when someone acquires.
   */
  acquireLease(holder: string, ttl_ms: number, now: Date): Promise<Lease>;
  /** Extends a held lease; fails with `lease_lost` when another holder took over. */
  renewLease(lease: Lease, ttl_ms: number, now: Date): Promise<Lease>;
  /**
   * Expires the lease at once so another holder may take it (with a higher token); a no-op when
   * another holder already took over.
   */
  releaseLease(lease: Lease): Promise<void>;
  readLease(): Promise<Lease | null>;

  /**
   * Makes `holder` the agent's writer for `ttl_ms` on the store's clock: succeeds when the agent
   * has no lease, when its lease expired, was released, or is already this holder's (which keeps
   * its token); otherwise `lease_lost` with the holder and its expiry in `details`. The agent need
   * not exist yet (a create is fenced by it too).
   */
  acquireAgentLease(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease>;
  /**
   * Extends, in one round trip, every lease in `leases` that still names `holder` and its token
   * (an expired lease nobody took renews); the others are reported `lost`.
   */
  renewAgentLeases(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases>;
  /**
   * Expires the lease at once (a passivated agent holds none), keeping its token so the next
   * holder's is higher; a no-op when another holder took over. `wake_at` (ISO time; default
   * `null`, none) is when the agent's earliest timer falls due: from then `claimDueAgents` hands
   * the agent to a node.
   */
  releaseAgentLease(lease: AgentLease, wake_at?: string | null): Promise<void>;
  readAgentLease(agent_id: string): Promise<AgentLeaseState | null>;
  /**
   * Takes, for `holder`, up to `limit` agents that need a node, by the agent lease rules (another
   * holder's token grows; the same holder keeps its own), on the store's clock, earliest first:
   * agents released with a `wake_at` that has come, and agents whose lease expired without a
   * release (their holder stopped renewing: it died or stalled; the claimer takes them over).
   * Agents with a live lease are never taken, nor is one agent given to two concurrent claimers.
   * A claim consumes the `wake_at`. Embedded stores claim nothing: the holder of their store lease
   * writes every agent and runs every timer itself.
   */
  claimDueAgents(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]>;

  /**
   * Registers `node_id` or renews its registration, live for `ttl_ms` on the store's clock, with
   * the address it advertises (the latest call's wins). Embedded stores keep the registry in
   * memory (they have one node).
   */
  heartbeatNode(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord>;
  /** Unregisters the node at once (clean shutdown); a no-op for an unknown id. */
  removeNode(node_id: string): Promise<void>;
  /** The nodes whose registration has not expired, by id. */
  listLiveNodes(): Promise<NodeRecord[]>;
  /** The agent's live lease with its holder's address; `null` when no live lease names a holder. */
  locateAgent(agent_id: string): Promise<AgentLocation | null>;

  listAgentIds(): Promise<string[]>;
  /** Every agent's latest roster entry (agents whose commits never carried one: `roster: null`), sorted by id. */
  listRoster(): Promise<RosterEntry[]>;
  /** One page of the roster, optionally filtered (a cluster node's `ListAgents`: nothing resident). */
  listRosterPage(query: RosterQuery): Promise<RosterPage>;
  /**
   * The agent whose latest roster entry lists `hash` in its `trigger_hashes` (the one key of a
   * roster entry a store reads: a capability URL finds its agent without a resident index), or `null`.
   */
  agentForTriggerHash(hash: string): Promise<string | null>;
  loadAgent(agent_id: string): Promise<StoredAgent | null>;
  /**
   * Releases what the store holds open for the agent (the lowdb store: its event segments'
   * descriptors); its data stays readable. A no-op for stores whose memory is their storage.
   */
  evictAgent(agent_id: string): void;
  /**
   * Atomically replaces the document and appends the events; resolves only once both are durable
   * (on disk, fsynced). Concurrent commits in the same tick may share one fsync (group commit).
   * A commit with both fences, or neither, is refused with `invalid_request`.
   */
  commit(commit: Commit): Promise<CommitResult>;
  readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage>;

  /**
   * A small durable key-value space for runtime-global records (e.g. create-agent idempotency
   * keys). `getGlobal` returns `undefined` for an absent key; `putGlobal` of `undefined` deletes it.
   * Values must be JSON-serializable (the lowdb store keeps them as JSON).
   */
  getGlobal(key: string): Promise<unknown>;
  putGlobal(key: string, value: unknown, fencing_token: number): Promise<void>;
  /**
   * Writes `value` under `key` unless the key holds a value already, fenced by the lease of the
   * agent the record is about (a create key names the agent it creates): refused with
   * `lease_lost`, nothing written, unless `agent_fencing_token` is that agent's current token.
   * Returns what the key holds afterwards: `value`, or the value an earlier write left (the first
   * of two nodes writing one key wins). In the embedded stores an agent token is the store
   * lease's token.
   */
  putGlobalOnce(key: string, value: unknown, fence: { agent_id: string; agent_fencing_token: number }): Promise<unknown>;
  /**
   * Calls `listener` for the events OTHER store instances (other nodes) commit, as ranges of one
   * agent's sequence, in commit order (PostgreSQL: `LISTEN`, migrations 4 and 7); the caller reads
   * them with `readEvents`. Every commit that inserts its events after `ready` is announced
   * (PostgreSQL announces only while some instance watches). Only stores several nodes share have
   * it; ranges committed while the listening connection was down are not announced again.
   */
  watchCommittedEvents?(listener: (range: CommittedRange) => void): CommittedEventsWatch;
}

/** A `watchCommittedEvents` registration. */
export interface CommittedEventsWatch {
  /** Resolves once the other instances announce their commits to this one. */
  ready: Promise<void>;
  /** Stops calling the listener. */
  stop(): void;
}

/** Events `first_seq..last_seq` (inclusive) of one agent, committed by another store instance. */
export interface CommittedRange {
  agent_id: string;
  first_seq: number;
  last_seq: number;
}
