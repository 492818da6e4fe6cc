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

export interface NewEvent {
  type: EventType;
  payload: Record<string, unknown>;
  /** ISO time; the runtime's clock decides, the store never reads one. */
  ts: string;
}

export interface Commit {
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
   * The lease fencing token of the writer. Anything but the current lease's token (an older one, or
   * one never issued), or no lease at all, is refused with `lease_lost` and nothing is written.
   */
  fencing_token: number;
  /**
   * A small JSON record about the agent that the runtime needs without loading its document
   * (boot, trigger lookup, listing), stored atomically with the commit. Omitted: the previous
   * entry stays. The store never interprets it.
   */
  roster?: unknown;
}

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
 * directory) and `memory/` (tests, benchmarks). Every implementation passes `test/store/contract.ts`.
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

  listAgentIds(): Promise<string[]>;
  /** Every agent's latest roster entry (agents whose commits never carried one: `roster: null`), sorted by id. */
  listRoster(): Promise<RosterEntry[]>;
  loadAgent(agent_id: string): Promise<StoredAgent | null>;
  /**
   * Releases what the store holds open for the agent (the lowdb store: its event segments'
   * descriptors); its data stays readable. A no-op for stores whose memory is their storage.
   */
  evictAgent(agent_id: string): void;
  /**
   * Atomically replaces the document and appends the events; resolves only once both are durable
   * (on disk, fsynced). Concurrent commits in the same tick may share one fsync (group commit).
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
}
