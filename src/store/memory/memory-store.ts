import { cloneJson, DomainError } from '../../domain/index.js';
import type { AgentEvent } from '../../domain/index.js';
import { assertAgentId, assertExpectedVersion, commitFence, eventId } from '../shared/commit-rules.js';
import { acquireEmbeddedAgentLease, embeddedAgentLeaseState, renewEmbeddedAgentLeases } from '../shared/embedded-agent-leases.js';
import { assertClaim, assertWakeAt, locationOf, MemoryNodeRegistry } from '../shared/node-rules.js';
import { pageSeqs } from '../shared/event-page.js';
import { agentListingHash, rosterPageOf, type HeldRoster } from '../shared/roster-query.js';
import { assertFence, decideAcquire, decideRelease, decideRenew } from '../shared/lease-rules.js';
import type {
  AgentLease,
  AgentLeaseState,
  AgentLocation,
  Commit,
  CommitResult,
  EventPage,
  EventPageQuery,
  HeldAgentLease,
  NodeRecord,
  Lease,
  RenewedAgentLeases,
  RosterEntry,
  RosterPage,
  RosterQuery,
  Store,
  StoredAgent,
} from '../store.js';

interface MemoryAgent {
  version: number;
  doc: unknown;
  roster: unknown;
  events: AgentEvent[];
}

export interface MemoryStoreOptions {
  /** Shown as `location`; defaults to `memory`. */
  location?: string;
}

/**
 * The Store contract in memory, for tests and benchmarks. Everything crossing the boundary is
 * deep-copied (`cloneJson`) so callers never share objects with the stored state, except the
 * committed document, which the store owns once committed (see `Store.commit`). Closing
 * keeps the data, so an instance can be reopened to simulate a restart.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly location: string;

  private readonly agents = new Map<string, MemoryAgent>();
  private readonly globals = new Map<string, unknown>();
  private readonly nodes = new MemoryNodeRegistry();
  private lease: Lease | null = null;
  private isOpen = false;

  constructor(options: MemoryStoreOptions = {}) {
    this.location = options.location ?? 'memory';
  }

  async open(): Promise<void> {
    this.isOpen = true;
  }

  async close(): Promise<void> {
    this.isOpen = false;
  }

  async acquireLease(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    this.assertOpen();
    this.lease = decideAcquire(this.lease, holder, ttl_ms, now);
    return { ...this.lease };
  }

  async renewLease(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    this.assertOpen();
    this.lease = decideRenew(this.lease, lease, ttl_ms, now);
    return { ...this.lease };
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.assertOpen();
    this.lease = decideRelease(this.lease, lease) ?? this.lease;
  }

  async readLease(): Promise<Lease | null> {
    this.assertOpen();
    return this.lease === null ? null : { ...this.lease };
  }

  /** Rides on the store lease (`shared/embedded-agent-leases.ts`): its holder writes every agent. */
  async acquireAgentLease(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease> {
    this.assertOpen();
    assertAgentId(agent_id);
    return acquireEmbeddedAgentLease(this.lease, () => true, agent_id, holder, ttl_ms);
  }

  async renewAgentLeases(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases> {
    this.assertOpen();
    return renewEmbeddedAgentLeases(this.lease, () => true, holder, leases, ttl_ms);
  }

  /** The store lease stays: nothing to release. */
  async releaseAgentLease(lease: AgentLease, wake_at: string | null = null): Promise<void> {
    this.assertOpen();
    assertAgentId(lease.agent_id);
    assertWakeAt(wake_at);
  }

  async readAgentLease(agent_id: string): Promise<AgentLeaseState | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    return embeddedAgentLeaseState(this.lease, agent_id);
  }

  /** Nothing to claim: the holder of the store lease writes every agent and runs every timer. */
  async claimDueAgents(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]> {
    this.assertOpen();
    assertClaim(holder, ttl_ms, limit);
    return [];
  }

  async heartbeatNode(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord> {
    this.assertOpen();
    return this.nodes.heartbeat(node_id, advertise_url, ttl_ms);
  }

  async removeNode(node_id: string): Promise<void> {
    this.assertOpen();
    this.nodes.remove(node_id);
  }

  async listLiveNodes(): Promise<NodeRecord[]> {
    this.assertOpen();
    return this.nodes.live();
  }

  async locateAgent(agent_id: string): Promise<AgentLocation | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    return locationOf(embeddedAgentLeaseState(this.lease, agent_id), this.nodes.live());
  }

  async listAgentIds(): Promise<string[]> {
    this.assertOpen();
    return [...this.agents.keys()].sort();
  }

  async listRoster(): Promise<RosterEntry[]> {
    this.assertOpen();
    return [...this.agents.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([agent_id, agent]) => ({ agent_id, version: agent.version, roster: cloneJson(agent.roster) }));
  }

  async listRosterPage(query: RosterQuery): Promise<RosterPage> {
    this.assertOpen();
    return rosterPageOf(this.sortedIds(), (id) => this.heldRoster(id), query);
  }

  async agentForTriggerHash(hash: string): Promise<string | null> {
    this.assertOpen();
    return agentListingHash(this.sortedIds(), (id) => this.heldRoster(id), hash);
  }

  private sortedIds(): string[] {
    return [...this.agents.keys()].sort();
  }

  private heldRoster(agent_id: string): HeldRoster | undefined {
    const agent = this.agents.get(agent_id);
    return agent && { version: agent.version, rosterJson: agent.roster === null ? undefined : JSON.stringify(agent.roster) };
  }

  /** Memory is this store's storage: nothing to drop. */
  evictAgent(agent_id: string): void {
    assertAgentId(agent_id);
  }

  async loadAgent(agent_id: string): Promise<StoredAgent | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    const agent = this.agents.get(agent_id);
    if (agent === undefined) return null;
    return { version: agent.version, doc: cloneJson(agent.doc), last_event_seq: agent.events.length };
  }

  async commit(commit: Commit): Promise<CommitResult> {
    this.assertOpen();
    assertAgentId(commit.agent_id);
    // The agent token is the store token here (shared/embedded-agent-leases.ts).
    assertFence(this.lease, commitFence(commit).token, undefined);
    const current = this.agents.get(commit.agent_id);
    assertExpectedVersion(commit.agent_id, current?.version ?? null, commit.expected_version);

    const agent: MemoryAgent = current ?? { version: 0, doc: null, roster: null, events: [] };
    const payloads = cloneJson(commit.events.map((event) => event.payload));
    const appended = commit.events.map(
      (event, i): AgentEvent => {
        const event_seq = agent.events.length + i + 1;
        return {
          id: eventId(commit.agent_id, event_seq),
          event_seq,
          ts: event.ts,
          agent_id: commit.agent_id,
          type: event.type,
          payload: payloads[i] as Record<string, unknown>,
        };
      },
    );
    const roster = commit.roster === undefined ? agent.roster : cloneJson(commit.roster);
    // The store owns the committed document (Store.commit): kept as is, copied only on load.
    agent.version += 1;
    agent.doc = commit.doc ?? null;
    agent.roster = roster;
    agent.events.push(...appended);
    this.agents.set(commit.agent_id, agent);
    return { version: agent.version, events: cloneJson(appended) };
  }

  async readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage> {
    this.assertOpen();
    assertAgentId(agent_id);
    const events = this.agents.get(agent_id)?.events ?? [];
    const newest = events.length;
    const oldest = newest === 0 ? 0 : 1;
    const page = pageSeqs(query, oldest, newest).map((seq) => events[seq - 1]).filter((e) => e !== undefined);
    return { events: cloneJson(page), oldest_seq: oldest, newest_seq: newest };
  }

  async getGlobal(key: string): Promise<unknown> {
    this.assertOpen();
    return cloneJson(this.globals.get(key));
  }

  async putGlobal(key: string, value: unknown, fencing_token: number): Promise<void> {
    this.assertOpen();
    assertFence(this.lease, fencing_token, undefined);
    if (value === undefined) {
      this.globals.delete(key);
    } else {
      this.globals.set(key, cloneJson(value));
    }
  }

  async putGlobalOnce(key: string, value: unknown, fence: { agent_id: string; agent_fencing_token: number }): Promise<unknown> {
    this.assertOpen();
    assertFence(this.lease, fence.agent_fencing_token, undefined);
    if (!this.globals.has(key)) this.globals.set(key, cloneJson(value));
    return cloneJson(this.globals.get(key));
  }

  private assertOpen(): void {
    if (!this.isOpen) throw new DomainError('store_unavailable', `store ${this.location} is not open`);
  }
}
