import { DomainError } from '../../../src/domain/index.js';
import {
  LowdbStore,
  type AgentLease,
  type AgentLeaseState,
  type AgentLocation,
  type Commit,
  type CommitResult,
  type EventPage,
  type EventPageQuery,
  type HeldAgentLease,
  type NodeRecord,
  type Lease,
  type RenewedAgentLeases,
  type RosterEntry,
  type RosterPage,
  type RosterQuery,
  type Store,
  type StoredAgent,
} from '../../../src/store/index.js';

/** An agent state change as the runtime records it (`TransitionRecord.from_state/to_state`). */
export interface StateChange {
  from: string;
  to: string;
}

interface Policy {
  /** The changes the path expects next, in order. */
  expected: StateChange[];
  /** What happens to changes once `expected` is used up: refused (`hold`) or let through (`open`). */
  then: 'hold' | 'open';
}

export interface Refusal {
  agentId: string;
  attempted: StateChange[];
  expected: StateChange[];
}

const INJECTED = 'injected fault';

export function isInjectedFault(error: unknown): boolean {
  return error instanceof DomainError && error.code === 'store_unavailable' && error.message.startsWith(INJECTED);
}

function changesOf(commit: Commit): StateChange[] {
  return commit.events
    .filter((event) => event.type === 'transition_committed')
    .map((event) => ({ from: String(event.payload['from_state']), to: String(event.payload['to_state']) }));
}

function same(a: StateChange, b: StateChange): boolean {
  return a.from === b.from && a.to === b.to;
}

/**
 * The real lowdb store with one fault to inject: a commit that would record an agent state change
 * the path does not expect fails as an I/O failure (`store_unavailable`), before anything is
 * written. The runtime then does what it does on any failed commit: rolls the agent back to its
 * last committed state and stops that operation. This is how a path holds the runtime in a state
 * it would leave on its own (the scheduler's IDLE, an effect's *.DONE) while the next model event
 * is an API call; a change the runtime makes on the path's own schedule passes untouched.
 * Agents without a policy are never refused.
 */
export class GateStore implements Store {
  readonly kind = 'lowdb';
  readonly location: string;
  private inner: LowdbStore;
  private readonly policies = new Map<string, Policy>();
  /** Every change committed per agent, in order: the runtime's own record of its actor states. */
  private readonly committed = new Map<string, StateChange[]>();
  readonly refusals: Refusal[] = [];

  constructor(readonly dataDir: string) {
    this.inner = new LowdbStore({ dataDir });
    this.location = this.inner.location;
  }

  /** Expect `changes` next for `agentId`; afterwards refuse (`hold`) or allow (`open`) everything. */
  expect(agentId: string, changes: readonly StateChange[], then: 'hold' | 'open'): void {
    this.policies.set(agentId, { expected: [...changes], then });
  }

  /** How many expected changes have not been committed yet. */
  pending(agentId: string): StateChange[] {
    return [...(this.policies.get(agentId)?.expected ?? [])];
  }

  history(agentId: string): StateChange[] {
    return [...(this.committed.get(agentId) ?? [])];
  }

  refusalsOf(agentId: string): Refusal[] {
    return this.refusals.filter((r) => r.agentId === agentId);
  }

  private admit(agentId: string, changes: StateChange[]): number {
    const policy = this.policies.get(agentId);
    if (!policy || changes.length === 0) return 0;
    let matched = 0;
    for (const change of changes) {
      const next = policy.expected[matched];
      if (next && same(next, change)) matched += 1;
      else if (matched < policy.expected.length || policy.then === 'hold') {
        this.refusals.push({ agentId, attempted: changes, expected: [...policy.expected] });
        throw new DomainError('store_unavailable', `${INJECTED}: ${agentId} ${change.from} → ${change.to} is not the path's next change`);
      }
    }
    return matched;
  }

  async commit(commit: Commit): Promise<CommitResult> {
    const changes = changesOf(commit);
    const matched = this.admit(commit.agent_id, changes);
    const result = await this.inner.commit(commit);
    const policy = this.policies.get(commit.agent_id);
    if (policy) policy.expected.splice(0, matched);
    this.committed.set(commit.agent_id, [...(this.committed.get(commit.agent_id) ?? []), ...changes]);
    return result;
  }

  async open(): Promise<void> {
    // A closed lowdb store cannot reopen; a reopened runtime gets a fresh one on the same directory.
    this.inner = new LowdbStore({ dataDir: this.dataDir });
    await this.inner.open();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  acquireLease(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    return this.inner.acquireLease(holder, ttl_ms, now);
  }

  renewLease(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    return this.inner.renewLease(lease, ttl_ms, now);
  }

  releaseLease(lease: Lease): Promise<void> {
    return this.inner.releaseLease(lease);
  }

  readLease(): Promise<Lease | null> {
    return this.inner.readLease();
  }

  acquireAgentLease(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease> {
    return this.inner.acquireAgentLease(agent_id, holder, ttl_ms);
  }

  renewAgentLeases(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases> {
    return this.inner.renewAgentLeases(holder, leases, ttl_ms);
  }

  releaseAgentLease(lease: AgentLease, wake_at?: string | null): Promise<void> {
    return this.inner.releaseAgentLease(lease, wake_at);
  }

  readAgentLease(agent_id: string): Promise<AgentLeaseState | null> {
    return this.inner.readAgentLease(agent_id);
  }

  claimDueAgents(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]> {
    return this.inner.claimDueAgents(holder, ttl_ms, limit);
  }

  heartbeatNode(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord> {
    return this.inner.heartbeatNode(node_id, advertise_url, ttl_ms);
  }

  removeNode(node_id: string): Promise<void> {
    return this.inner.removeNode(node_id);
  }

  listLiveNodes(): Promise<NodeRecord[]> {
    return this.inner.listLiveNodes();
  }

  locateAgent(agent_id: string): Promise<AgentLocation | null> {
    return this.inner.locateAgent(agent_id);
  }

  listAgentIds(): Promise<string[]> {
    return this.inner.listAgentIds();
  }

  listRoster(): Promise<RosterEntry[]> {
    return this.inner.listRoster();
  }

  listRosterPage(query: RosterQuery): Promise<RosterPage> {
    return this.inner.listRosterPage(query);
  }

  agentForTriggerHash(hash: string): Promise<string | null> {
    return this.inner.agentForTriggerHash(hash);
  }

  loadAgent(agent_id: string): Promise<StoredAgent | null> {
    return this.inner.loadAgent(agent_id);
  }

  evictAgent(agent_id: string): void {
    this.inner.evictAgent(agent_id);
  }

  readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage> {
    return this.inner.readEvents(agent_id, query);
  }

  getGlobal(key: string): Promise<unknown> {
    return this.inner.getGlobal(key);
  }

  putGlobal(key: string, value: unknown, fencing_token: number): Promise<void> {
    return this.inner.putGlobal(key, value, fencing_token);
  }

  putGlobalOnce(key: string, value: unknown, fence: { agent_id: string; agent_fencing_token: number }): Promise<unknown> {
    return this.inner.putGlobalOnce(key, value, fence);
  }
}
