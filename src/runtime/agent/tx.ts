import type { Actor } from 'xstate';
import { agentLabels, type agentMachine, type AgentEmitted, type AgentEvent as MachineEvent, type ContinuationContext, type ContinuationEvent, type TaskEvent } from '../../../machines/index.js';
import {
  DomainError,
  type AgentEvent,
  type LifecyclePhase,
  type TransitionPhaseLog,
  type EventType,
  type EventPayload,
  type TransitionRecord,
  type TransitionTrigger,
  type TriggerCapability,
  TRANSITIONAL_PHASES,
} from '../../domain/index.js';
import type { CommitFence, CommitResult, NewEvent, Store } from '../../store/store.js';
import { addTransition, closingRef, copyDoc, prune, reshare, type AgentDoc } from './agent-doc.js';
import { isoText, newId, type Clock } from '../clock.js';
import { rosterOf, type AgentRoster } from './roster.js';
import { promised } from '../promised.js';

/** Phases whose side effects are requested on entry and answered by an event (seed 002). */
const TRANSITIONAL: ReadonlySet<LifecyclePhase> = new Set(TRANSITIONAL_PHASES);

/** What a Tx needs of its agent's cell (implemented by `AgentCell`). */
export interface TxCell {
  readonly id: string;
  actor: Actor<typeof agentMachine> | null;
  readonly head: AgentDoc;
  readonly headVersion: number;
  rosterJson: string | undefined;
  whenDurable(): Promise<unknown>;
  issue<R>(doc: AgentDoc, version: number, rosterJson: string, write: () => Promise<R>, committed: (result: R) => void): Promise<R>;
  ensureActor(): Actor<typeof agentMachine>;
  takeEffects(): AgentEmitted[];
  passivate(): void;
}

/** What a Tx needs of its runtime (a part of `CellEnv`). */
export interface TxEnv {
  store: Store;
  clock: Clock;
  /** Told every event a durable commit appended. */
  bus: { publish(events: AgentEvent[]): void };
  /**
   * The fence of a commit for the agent: the store lease's token, or in a cluster the agent
   * lease's (`agent_fencing_token`); throws `lease_lost` once that lease is gone, so nothing is written.
   */
  fence(agentId: string): CommitFence;
  /** A commit is durable; `roster` is the entry it carried, if any, and `rosterJson` its JSON. */
  onCommitted(cell: TxCell, roster: AgentRoster | undefined, rosterJson: string): void;
  /** A commit was refused; a fenced (`lease_lost`) runtime (or, in a cluster, agent) stops its side effects at once. */
  commitFailed(error: unknown, agentId: string): void;
}

/** Why a state change happened: the fields of a TransitionRecord the caller decides. */
export interface TransitionCause {
  reason: string;
  trigger: TransitionTrigger;
  transition_id?: string;
  initiator?: string;
  principal?: string;
  evidence_refs?: string[];
  requested_at?: string;
  /** Protocol phases of a transition that commits at once (one with no transitional state). */
  phases?: TransitionPhaseLog[];
}

/** A draft of one agent's records plus the events it will append, committed atomically by `flush` (mid-operation) or `finish` (at its end). */
export class Tx {
  /** Copied from the lane's head on first use: an operation that never reads it copies nothing. */
  private draft: AgentDoc | null = null;
  /** The version the draft was built on: its commit expects it (a head that was refused since is gone). */
  private base = 0;
  private events: NewEvent[] = [];
  /** Capabilities minted by this operation, raw token included: only the operation's caller sees them, once. */
  readonly minted: TriggerCapability[] = [];

  constructor(
    readonly cell: TxCell,
    private readonly env: TxEnv,
    /** See `RunOptions.shallow`. */
    private readonly shallow = false,
  ) {}

  get doc(): AgentDoc {
    if (this.draft === null) {
      this.draft = this.copy(this.cell.head);
      this.base = this.cell.headVersion;
    }
    return this.draft;
  }

  get now(): Date {
    return this.env.clock.now();
  }

  emit<T extends EventType>(type: T, payload: EventPayload<T>): void {
    this.events.push({ type, payload, ts: isoText(this.env.clock.now()) });
  }

  get dirty(): boolean {
    return this.events.length > 0 || this.touched;
  }

  private touched = false;
  private afterCommit: Array<() => void> = [];

  /** Runs `effect` once the draft is durable (never if the operation fails). */
  onCommit(effect: () => void): void {
    this.afterCommit.push(effect);
  }

  /** Marks the draft as changed even if no event was emitted. */
  touch(): void {
    this.touched = true;
  }

  /** The draft's `machine` is behind the live actor: persisted once, when the draft is committed or read whole. */
  private machineStale = false;

  /** The agent actor (or one of its children) took an event: its snapshot goes into the draft. */
  actorChanged(): void {
    this.machineStale = true;
    this.touched = true;
  }

  /**
   * Brings the draft's `machine` up to the live actor. Persisting walks every child actor, so an
   * operation that sends many events (a launch of 100 tasks) persists once, not once per event.
   */
  syncMachine(): void {
    if (!this.machineStale) return;
    this.machineStale = false;
    this.doc.machine = this.cell.ensureActor().getPersistedSnapshot();
  }

  /** Sends `event` to a child actor of the agent (`continuation`, or a task by its id); the draft takes its snapshot. */
  tellChild(childId: string, event: ContinuationEvent | TaskEvent): void {
    this.cell.ensureActor().getSnapshot().children[childId]?.send(event);
    this.actorChanged();
  }

  /** The continuation actor's mirror of the agent's wait: the wait it holds while in `waiting`. */
  continuationWait(): ContinuationContext['wait'] {
    const snapshot = this.cell.ensureActor().getSnapshot().children['continuation']?.getSnapshot() as { value?: { wait?: string }; context?: ContinuationContext } | undefined;
    return snapshot?.value?.wait === 'waiting' ? (snapshot.context?.wait ?? null) : null;
  }

  /** Passivates the agent's actor once the draft holds its snapshot (a stopped actor's is no longer its state). */
  passivate(): void {
    this.syncMachine();
    this.cell.passivate();
  }

  /**
   * Sends an event to the agent actor. When its state changes, records a TransitionRecord and
   * bumps `state_version`. Returns whether the machine took a transition to another state.
   */
  send(event: MachineEvent, cause: TransitionCause): boolean {
    const actor = this.cell.ensureActor();
    const before = actor.getSnapshot();
    const beforeLabels = agentLabels(before);
    actor.send(event);
    const after = actor.getSnapshot();
    if (after.status === 'error') throw new DomainError('internal_error', `agent ${this.cell.id} actor failed on ${event.type}`);
    this.actorChanged();
    // A failure that keeps the state (RECOVER.FAILED) is recorded too.
    this.doc.failure = after.context.failure;
    // Snapshot values are immutable: the same object is the same state (the usual no-op event).
    if (after.value === before.value || JSON.stringify(after.value) === JSON.stringify(before.value)) return false;
    const labels = agentLabels(after);
    const now = isoText(this.env.clock.now());
    const record: TransitionRecord = {
      transition_id: cause.transition_id ?? newId('tr'),
      agent_id: this.cell.id,
      seq: this.doc.transition_count + 1,
      from_state: statePath(before.value),
      to_state: statePath(after.value),
      from_phase: beforeLabels.phase,
      to_phase: labels.phase,
      reason: cause.reason,
      trigger: cause.trigger,
      expected_version: this.doc.state.state_version,
      requested_at: cause.requested_at ?? now,
      committed_at: now,
      actor: { initiator: cause.initiator ?? 'runtime', principal: cause.principal ?? 'runtime' },
      evidence_refs: cause.evidence_refs ?? [],
      phases: cause.phases ?? [],
    };
    this.carryProtocol(record, labels.phase);
    this.doc.transition_count = record.seq;
    addTransition(this.doc, record);
    this.doc.state.state_version += 1;
    this.doc.state.status = labels.status;
    this.doc.state.phase = labels.phase;
    // The machine event rides along in the log (not in the document): `holon-xstate replay` feeds it
    // to the machines again.
    this.emit('transition_committed', { ...record, machine_event: { ...event } });
    return true;
  }

  /** Appends a protocol phase to the open lifecycle transition, and logs it as an event. */
  logPhase(phase: TransitionPhaseLog['phase'], detail?: string): void {
    const at = isoText(this.env.clock.now());
    const pending = this.doc.pending_transition;
    if (pending) pending.phases.push({ phase, at, ...(detail ? { detail } : {}) });
    this.emit('transition_phase', { transition_id: pending?.transition_id ?? null, phase, ...(detail ? { detail } : {}) });
  }

  /**
   * Entering a transitional state opens the seed-002 protocol (requested, guard checked); the
   * transition that leaves it is the commit and carries every phase logged in between.
   */
  private carryProtocol(record: TransitionRecord, toPhase: LifecyclePhase): void {
    const pending = this.doc.pending_transition;
    const opening: TransitionPhaseLog[] = [
      { phase: 'transition_requested', at: record.requested_at },
      { phase: 'guard_checked', at: record.committed_at },
    ];
    if (pending && pending.transitional_phase === record.from_phase) {
      record.phases = [...pending.phases, { phase: 'transition_committed', at: record.committed_at }];
      record.requested_at = pending.requested_at;
      record.evidence_refs = [...record.evidence_refs, closingRef(pending.transition_id)];
      this.doc.pending_transition = null;
    } else if (TRANSITIONAL.has(toPhase)) {
      record.phases = [...opening];
    }
    if (TRANSITIONAL.has(toPhase)) {
      this.doc.pending_transition = {
        transition_id: record.transition_id,
        from_phase: record.from_phase,
        transitional_phase: toPhase,
        requested_at: record.committed_at,
        phases: [...opening],
      };
    }
  }

  private copy(doc: AgentDoc): AgentDoc {
    return this.shallow ? { ...doc, state: { ...doc.state } } : copyDoc(doc);
  }

  /** Commits the draft now (a durable checkpoint inside a longer operation); the draft stays in use. */
  flush(): Promise<AgentEvent[]> {
    return this.commit(false);
  }

  /** Commits the draft at the end of the operation: the draft itself becomes the committed document. */
  finish(): Promise<AgentEvent[]> {
    return this.commit(true);
  }

  /**
   * Hands the draft to the store and resolves once it is durable (effects run then). One
   * document copy per commit: the store owns what it is handed, so a checkpoint hands it a copy
   * (the operation keeps mutating its draft, and may hold references into it), the end hands the
   * draft. Nothing to write still waits for the commits issued before: effects and answers never
   * run ahead of the state they follow.
   */
  private commit(handOver: boolean): Promise<AgentEvent[]> {
    const effects = this.afterCommit;
    this.afterCommit = [];
    if (!this.dirty) {
      return this.cell.whenDurable().then(() => {
        for (const effect of effects) effect();
        return [];
      });
    }
    this.syncMachine();
    const draft = this.doc;
    draft.last_commit_at = isoText(this.env.clock.now());
    // Only a draft handed over is never used again: a checkpoint's draft goes on being edited.
    // A shallow draft shares every part it did not replace already.
    if (handOver && !this.shallow) reshare(draft, this.cell.head);
    prune(draft, this.cell.head);
    const entry = rosterOf(draft);
    const rosterJson = JSON.stringify(entry);
    const roster = rosterJson === this.cell.rosterJson ? undefined : entry;
    const doc = handOver ? draft : this.copy(draft);
    const events = this.events;
    const expected = this.base;
    this.events = [];
    this.touched = false;
    // The committed document is read-only from here on: a later use of this Tx copies it again.
    if (handOver) this.draft = null;
    else this.base = expected + 1;
    // A fencing token refused at once fails the commit like the store would (a rejection).
    const write = () =>
      promised(() =>
        this.env.store.commit({
          agent_id: this.cell.id,
          // A cell at version 0 holds an agent not stored yet: its first commit creates it.
          expected_version: expected === 0 ? null : expected,
          doc,
          events,
          ...this.env.fence(this.cell.id),
          ...(roster === undefined ? {} : { roster }),
        }),
      );
    const committed = (result: CommitResult) => {
      this.env.bus.publish(result.events);
      this.env.onCommitted(this.cell, roster, rosterJson);
      for (const effect of effects) effect();
    };
    return this.cell.issue(doc, expected + 1, rosterJson, write, committed).then(
      (result) => result.events,
      (error: unknown) => {
        this.env.commitFailed(error, this.cell.id);
        throw error;
      },
    );
  }
}

/** `{ active: 'awakeIdle' }` → `active.awakeIdle`. */
export function statePath(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const [key, child] = Object.entries(value as Record<string, unknown>)[0] ?? [];
    return key === undefined ? '' : `${key}.${statePath(child)}`;
  }
  return String(value);
}

