import { z } from 'zod';
import {
  AgentConfig,
  cloneJson,
  jsonEqual,
  AgentIdentity,
  AgentState,
  ClosureDecision,
  EffectRecord,
  ExternalTriggerRecord,
  IdempotencyRecord,
  MessageEnvelope,
  SchedulerDecision,
  Snapshot,
  TaskRecord,
  TERMINAL_TASK_STATUSES,
  TimerRecord,
  TransitionPhaseLog,
  TransitionRecord,
  WaitConditionRecord,
  WorkItemRecord,
  type CreateAgentRequest,
} from '../../domain/index.js';
import { isSettled, tallyOf } from './queue-tally.js';

export const PendingWakeHint = z.object({
  reason: z.string(),
  source: z.string().nullable(),
  external_trigger_id: z.string().nullable(),
  created_at: z.string(),
});
export type PendingWakeHint = z.infer<typeof PendingWakeHint>;

/**
 * A lifecycle transition with side effects between its request and its commit (seed 002 protocol):
 * entering a transitional state opens it, every phase is appended as it is logged, and the
 * transition out of the transitional state carries the phases and closes it.
 */
export const PendingTransition = z.object({
  transition_id: z.string(),
  from_phase: z.string(),
  transitional_phase: z.string(),
  requested_at: z.string(),
  phases: z.array(TransitionPhaseLog),
});
export type PendingTransition = z.infer<typeof PendingTransition>;

/**
 * Everything the runtime knows of one agent: the unit the Store commits atomically. Kept small —
 * processed messages, finished effects and old snapshots are pruned — so a commit stays cheap.
 */
export const AgentDoc = z.object({
  identity: AgentIdentity,
  config: AgentConfig,
  state: AgentState,
  /** XState's persisted snapshot of the agent actor (with its task and continuation children). */
  machine: z.unknown(),
  queue: z.array(MessageEnvelope),
  next_message_seq: z.number().int().positive(),
  work_items: z.array(WorkItemRecord),
  waits: z.array(WaitConditionRecord),
  timers: z.array(TimerRecord),
  tasks: z.array(TaskRecord),
  triggers: z.array(ExternalTriggerRecord),
  effects: z.array(EffectRecord),
  /**
   * Recent committed transition records (and the client-named ones), oldest first, so a replayed
   * transition returns its first result. A list, not a record keyed by id: an agent commits one
   * every few operations for its whole life, and copying a record of dozens of random keys on
   * each (the draft never edits a committed one) cost more than the rest of a turn.
   */
  transitions: z.preprocess(transitionList, z.array(TransitionRecord)),
  pending_transition: PendingTransition.nullable(),
  transition_count: z.number().int().nonnegative(),
  snapshots: z.array(Snapshot),
  last_closure: ClosureDecision.nullable(),
  last_turn_terminal: z.enum(['completed', 'failed', 'aborted']).nullable(),
  last_decision: SchedulerDecision.nullable(),
  runtime_error: z.boolean(),
  pending_wake_hint: PendingWakeHint.nullable(),
  /** Idempotency keys of recent runtime-generated messages (tick dedup), newest last, bounded. */
  recent_keys: z.array(z.string()),
  /**
   * The `Idempotency-Key`s of the agent's recent keyed requests with their answers, oldest first,
   * each written by the commit that made its request's effect durable (`recordAnswer`). Bounded
   * (`recentAnswers`); documents written before keys were recorded here have none.
   */
  idempotency: z.array(IdempotencyRecord).default([]),
  /** Why the last wake refused Active (incompatible snapshot schema), with the way out. */
  refusal: z.object({ reason: z.string(), hint: z.string() }).nullable(),
  failure: z.object({ phase: z.string(), reason: z.string() }).nullable(),
  last_commit_at: z.string(),
});
export type AgentDoc = z.infer<typeof AgentDoc>;

/** Documents written before transitions became a list kept them as a record keyed by id. */
function transitionList(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  return Object.values(raw).sort((a: { seq?: number }, b: { seq?: number }) => (a.seq ?? 0) - (b.seq ?? 0));
}

/** The committed record of `transitionId`, while the document keeps it (see `prune`). */
export function findTransition(doc: AgentDoc, transitionId: string): TransitionRecord | undefined {
  return doc.transitions.find((t) => t.transition_id === transitionId);
}

/** Records in one of these states are history: no code changes them any more. */
const FINISHED_TASK_STATUSES: ReadonlySet<string> = new Set(TERMINAL_TASK_STATUSES);
const finishedTask = (t: AgentDoc['tasks'][number]) => FINISHED_TASK_STATUSES.has(t.status);
const settledEffect = (e: AgentDoc['effects'][number]) => e.status !== 'started';

/**
 * A copy of a document that either side may mutate. Transition records, snapshots, the machine
 * snapshot, messages, finished tasks and settled effects are never edited once written (they are
 * added, dropped or replaced whole: a message's status changes through `updateMessages`), so the
 * copy shares them. The containers are shared too while they hold nothing else (transitions,
 * snapshots and the queue always), because the only code that adds to them replaces them
 * (`appendRecord`, `addTransition`, `addSnapshot`, `updateMessages`): an unchanged list keeps its
 * identity, and the lowdb store does not log it again. Open tasks and effects are copied one
 * level deep (code assigns their fields, and replaces anything nested), so `reshare` can put back
 * the ones an operation left alone. Everything else is copied deep.
 * Idempotency records are never edited either (their list is replaced by `recordAnswer`).
 * Copying everything deep on every operation was most of the runtime's CPU time. Code that edits
 * a shared part in place would change committed state: replace it instead
 * (test/runtime/committed-docs.test.ts).
 */
export function copyDoc(doc: AgentDoc): AgentDoc {
  const { transitions, snapshots, machine, queue, tasks, effects, idempotency, ...rest } = doc;
  const copy = cloneJson(rest) as AgentDoc;
  copy.idempotency = idempotency;
  copy.queue = queue;
  copy.tasks = copyOpen(tasks, finishedTask);
  copy.effects = copyOpen(effects, settledEffect);
  copy.machine = machine;
  copy.transitions = transitions;
  copy.snapshots = snapshots;
  return copy;
}

/** Open record copy → the record it was copied from. */
const copiedFrom = new WeakMap<object, object>();

/** `items` with each unsettled one replaced by a shallow copy; `items` itself when all are settled. */
function copyOpen<T extends object>(items: T[], settled: (item: T) => boolean): T[] {
  let copied = false;
  const out = items.map((item) => {
    if (settled(item)) return item;
    copied = true;
    const copy = { ...item };
    copiedFrom.set(copy, item);
    return copy;
  });
  return copied ? out : items;
}

/** The fields `copyDoc` takes out before its deep copy (keep the two lists the same): handed over as they are, or copied record by record (`copyOpen`). */
const NOT_CLONED: ReadonlySet<string> = new Set(['transitions', 'snapshots', 'machine', 'queue', 'tasks', 'effects', 'idempotency']);

/**
 * Before a draft is committed for good (it is not used afterwards): each open record the
 * operation did not change goes back to the very object it was copied from, and a list whose
 * records all did goes back to `base`'s list; so does every deep-copied field the operation left
 * equal (a prompt changes `state` and `queue`, not `identity`, `config` or `triggers`). Unchanged
 * parts keep their identity, so the next copy, the lowdb store's JSON cache and its change log
 * skip them, and the copies die young instead of living on in the committed document.
 */
export function reshare(doc: AgentDoc, base: AgentDoc): void {
  doc.queue = reshareList(doc.queue, base.queue);
  doc.tasks = reshareList(doc.tasks, base.tasks);
  doc.effects = reshareList(doc.effects, base.effects);
  const draft = doc as Record<string, unknown>;
  const previous = base as Record<string, unknown>;
  for (const key in draft) {
    if (NOT_CLONED.has(key) || draft[key] === previous[key]) continue;
    if (Object.hasOwn(previous, key) && jsonEqual(draft[key], previous[key])) draft[key] = previous[key];
  }
}

function reshareList<T extends object>(list: T[], base: T[]): T[] {
  if (list === base) return list;
  let same = list.length === base.length;
  const out = list.map((item, i) => {
    const original = copiedFrom.get(item) as T | undefined;
    // Decided once: kept, a changed copy would hold every earlier version of its record alive.
    copiedFrom.delete(item);
    const kept = original !== undefined && shallowEqual(item, original) ? original : item;
    if (kept !== base[i]) same = false;
    return kept;
  });
  return same ? base : out;
}

function shallowEqual(a: object, b: object): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if ((a as Record<string, unknown>)[key] !== (b as Record<string, unknown>)[key]) return false;
  return true;
}

type RecordList = 'queue' | 'tasks' | 'effects';

/** Appends to a list of `doc` without editing one a committed document may share (see `copyDoc`). */
export function appendRecord<K extends RecordList>(doc: AgentDoc, list: K, record: AgentDoc[K][number]): void {
  doc[list] = [...doc[list], record] as AgentDoc[K];
}

/** Records a committed transition in `doc` without editing a container a committed document may share. */
export function addTransition(doc: AgentDoc, record: TransitionRecord): void {
  doc.transitions = [...doc.transitions, record];
}

/** Keeps a snapshot in `doc` without editing a container a committed document may share. */
export function addSnapshot(doc: AgentDoc, snapshot: Snapshot): void {
  doc.snapshots = [...doc.snapshots, snapshot];
}

export const RECENT_KEYS_LIMIT = 512;
const PROCESSED_MESSAGES_KEPT = 64;
const FINISHED_TASKS_KEPT = 256;
const SNAPSHOTS_KEPT = 8;
const SETTLED_EFFECTS_KEPT = 256;
const RECENT_TRANSITIONS_KEPT = 64;
const OPERATOR_TRANSITIONS_KEPT = 512;
const RUNTIME_TRANSITION_ID = /^tr_[0-9a-f]{20}$/;
const CLOSES = 'transition:';

/** The evidence by which the record leaving a transitional state names the client's transition that entered it. */
export function closingRef(transitionId: string): string {
  return `${CLOSES}${transitionId}`;
}

/**
 * Drops history that no decision reads any more, so documents (and commits) stay small. A list
 * that is still the very one of `base` (the version the draft was built on, pruned when it was
 * committed) is within its bound already.
 */
export function prune(doc: AgentDoc, base: AgentDoc): void {
  // Runs on every commit: each changed list is only counted unless it is over its bound.
  // The queue's tally is carried over an input's append: a flood does not count it per input.
  if (doc.queue !== base.queue && tallyOf(doc.queue).settled > PROCESSED_MESSAGES_KEPT) doc.queue = dropOldest(doc.queue, isSettled, PROCESSED_MESSAGES_KEPT);
  if (doc.tasks !== base.tasks) doc.tasks = dropOldest(doc.tasks, finishedTask, FINISHED_TASKS_KEPT);
  if (doc.snapshots.length > SNAPSHOTS_KEPT) doc.snapshots = doc.snapshots.slice(-SNAPSHOTS_KEPT);
  if (doc.effects !== base.effects) doc.effects = dropOldest(doc.effects, settledEffect, SETTLED_EFFECTS_KEPT);
  if (doc.recent_keys.length > RECENT_KEYS_LIMIT) doc.recent_keys = doc.recent_keys.slice(-RECENT_KEYS_LIMIT);
  if (doc.idempotency !== base.idempotency) doc.idempotency = recentAnswers(doc.idempotency);
  // Every record is in the event log; the document keeps the recent ones, plus those a client
  // named (their transition_id must replay), so it does not grow with the agent's age.
  if (doc.transitions !== base.transitions && doc.transitions.length > RECENT_TRANSITIONS_KEPT) doc.transitions = recentTransitions(doc.transitions);
}

/**
 * The newest `RECENT_TRANSITIONS_KEPT` records, the newest `OPERATOR_TRANSITIONS_KEPT` client-named
 * ones and the records that closed those (`transition:<id>` in their evidence: a replay answers
 * with their phases), oldest first.
 */
function recentTransitions(list: TransitionRecord[]): TransitionRecord[] {
  const recentFrom = list.length - RECENT_TRANSITIONS_KEPT;
  // The usual case: what fell out of the recent ones are runtime records that closed nothing.
  const older = list.slice(0, recentFrom);
  if (!older.some((t) => isClientNamed(t) || t.evidence_refs.some((ref) => ref.startsWith(CLOSES)))) return list.slice(recentFrom);
  const named = new Set<string>();
  for (let i = list.length - 1; i >= 0 && named.size < OPERATOR_TRANSITIONS_KEPT; i--) {
    const record = list[i] as TransitionRecord;
    if (isClientNamed(record)) named.add(record.transition_id);
  }
  const kept = list.filter((t, i) => i >= recentFrom || named.has(t.transition_id) || closesNamed(t, named));
  return kept.length === list.length ? list : kept;
}

/** Ids the runtime minted (`tr_…`) are never replayed; a client's must keep answering with its record. */
function isClientNamed(record: TransitionRecord): boolean {
  return !RUNTIME_TRANSITION_ID.test(record.transition_id);
}

function closesNamed(record: TransitionRecord, named: ReadonlySet<string>): boolean {
  return record.evidence_refs.some((ref) => ref.startsWith(CLOSES) && named.has(ref.slice(CLOSES.length)));
}

/** The newest keyed requests an agent's document remembers, by count and by the size of their answers. */
export const IDEMPOTENCY_KEYS_KEPT = 256;
export const IDEMPOTENCY_BYTES_KEPT = 128 * 1024;

/** The newest records within both bounds (always the newest one), oldest first. */
function recentAnswers(records: IdempotencyRecord[]): IdempotencyRecord[] {
  let bytes = 0;
  let from = records.length;
  while (from > 0 && records.length - from < IDEMPOTENCY_KEYS_KEPT) {
    const next = bytes + (records[from - 1] as IdempotencyRecord).bytes;
    if (next > IDEMPOTENCY_BYTES_KEPT && from < records.length) break;
    bytes = next;
    from -= 1;
  }
  return from === 0 ? records : records.slice(from);
}

/** `items` without its oldest entries that match `settled`, beyond the newest `kept` of them. */
function dropOldest<T>(items: T[], settled: (item: T) => boolean, kept: number): T[] {
  let count = 0;
  for (const item of items) if (settled(item)) count += 1;
  let excess = count - kept;
  if (excess <= 0) return items;
  return items.filter((item) => !(settled(item) && excess-- > 0));
}

/** The document of a new agent in Created (seed 002 step 1), before anything is stored. */
export function newAgentDoc(agentId: string, req: CreateAgentRequest, now: string): AgentDoc {
  return {
    identity: {
      agent_id: agentId,
      kind: 'agent',
      profile_preset: req.profile ?? 'default',
      owner: req.owner ?? 'operator',
      mission: req.mission ?? '',
      registry_status: 'active',
      identity_version: 1,
      parent_agent_id: null,
      created_at: now,
    },
    config: { turn_runner: req.config?.turn_runner ?? 'scripted', model: req.config?.model ?? 'scripted' },
    state: { agent_id: agentId, status: 'booting', phase: 'created', state_version: 0, current_run_id: null, current_work_item_id: null, pending: 0, turn_index: 0, sleeping_until: null, last_continuation: null },
    machine: null,
    queue: [],
    next_message_seq: 1,
    work_items: [],
    waits: [],
    timers: [],
    tasks: [],
    triggers: [],
    effects: [],
    transitions: [],
    pending_transition: null,
    transition_count: 0,
    snapshots: [],
    last_closure: null,
    last_turn_terminal: null,
    last_decision: null,
    runtime_error: false,
    pending_wake_hint: null,
    recent_keys: [],
    idempotency: [],
    refusal: null,
    failure: null,
    last_commit_at: now,
  };
}
