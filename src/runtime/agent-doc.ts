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
} from '../domain/index.js';

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
  /** transition_id → recent committed records (all operator ones), so a replayed transition returns its first result. */
  transitions: z.record(z.string(), TransitionRecord),
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
  /** Why the last wake refused Active (incompatible snapshot schema), with the way out. */
  refusal: z.object({ reason: z.string(), hint: z.string() }).nullable(),
  failure: z.object({ phase: z.string(), reason: z.string() }).nullable(),
  last_commit_at: z.string(),
});
export type AgentDoc = z.infer<typeof AgentDoc>;

/** Records in one of these states are history: no code changes them any more. */
const SETTLED_MESSAGE: ReadonlySet<string> = new Set(['processed', 'aborted', 'dropped']);
const FINISHED_TASK_STATUSES: ReadonlySet<string> = new Set(TERMINAL_TASK_STATUSES);
const settledMessage = (m: AgentDoc['queue'][number]) => SETTLED_MESSAGE.has(m.status);
const finishedTask = (t: AgentDoc['tasks'][number]) => FINISHED_TASK_STATUSES.has(t.status);
const settledEffect = (e: AgentDoc['effects'][number]) => e.status !== 'started';

/**
 * A copy of a document that either side may mutate. Transition records, snapshots, the machine
 * snapshot, and settled messages, finished tasks and settled effects are never edited once
 * written (they are added, dropped or replaced whole), so the copy shares them. The containers
 * are shared too while they hold nothing else (transitions and snapshots always), because the
 * only code that adds to them replaces them (`appendRecord`, `addTransition`, `addSnapshot`):
 * an unchanged list keeps its identity, and the lowdb store does not log it again. Open records
 * are copied one level deep (code assigns their fields, and replaces anything nested), so
 * `reshare` can put back the ones an operation left alone. Everything else is copied deep.
 * Copying everything deep on every operation was most of the runtime's CPU time. Code that edits
 * a shared part in place would change committed state: replace it instead
 * (test/runtime/committed-docs.test.ts).
 */
export function copyDoc(doc: AgentDoc): AgentDoc {
  const { transitions, snapshots, machine, queue, tasks, effects, ...rest } = doc;
  const copy = cloneJson(rest) as AgentDoc;
  copy.queue = copyOpen(queue, settledMessage);
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
const NOT_CLONED: ReadonlySet<string> = new Set(['transitions', 'snapshots', 'machine', 'queue', 'tasks', 'effects']);

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
export function addTransition(doc: AgentDoc, record: AgentDoc['transitions'][string]): void {
  doc.transitions = { ...doc.transitions, [record.transition_id]: record };
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

/**
 * Drops history that no decision reads any more, so documents (and commits) stay small. A list
 * that is still the very one of `base` (the version the draft was built on, pruned when it was
 * committed) is within its bound already.
 */
export function prune(doc: AgentDoc, base: AgentDoc): void {
  // Runs on every commit: each changed list is only counted unless it is over its bound.
  if (doc.queue !== base.queue) doc.queue = dropOldest(doc.queue, settledMessage, PROCESSED_MESSAGES_KEPT);
  if (doc.tasks !== base.tasks) doc.tasks = dropOldest(doc.tasks, finishedTask, FINISHED_TASKS_KEPT);
  if (doc.snapshots.length > SNAPSHOTS_KEPT) doc.snapshots = doc.snapshots.slice(-SNAPSHOTS_KEPT);
  if (doc.effects !== base.effects) doc.effects = dropOldest(doc.effects, settledEffect, SETTLED_EFFECTS_KEPT);
  if (doc.recent_keys.length > RECENT_KEYS_LIMIT) doc.recent_keys = doc.recent_keys.slice(-RECENT_KEYS_LIMIT);
  // Every record is in the event log; the document keeps the recent ones, plus those a client
  // named (their transition_id must replay), so it does not grow with the agent's age.
  if (doc.transitions === base.transitions || countUpTo(doc.transitions, RECENT_TRANSITIONS_KEPT + 1) <= RECENT_TRANSITIONS_KEPT) return;
  const records = Object.values(doc.transitions);
  records.sort((a, b) => a.seq - b.seq);
  const recent = new Set(records.slice(-RECENT_TRANSITIONS_KEPT).map((t) => t.transition_id));
  // Ids the runtime minted (`tr_…`) are never replayed; a client's must keep answering with its record.
  const operators = records.filter((t) => !RUNTIME_TRANSITION_ID.test(t.transition_id)).slice(-OPERATOR_TRANSITIONS_KEPT).map((t) => t.transition_id);
  for (const id of operators) recent.add(id);
  if (recent.size === records.length) return;
  doc.transitions = Object.fromEntries(records.filter((t) => recent.has(t.transition_id)).map((t) => [t.transition_id, t]));
}

/** The number of keys of `record`, counted no further than `limit` (no array is built). */
function countUpTo(record: object, limit: number): number {
  let count = 0;
  for (const _ in record) if (++count >= limit) break;
  return count;
}

/** `items` without its oldest entries that match `settled`, beyond the newest `kept` of them. */
function dropOldest<T>(items: T[], settled: (item: T) => boolean, kept: number): T[] {
  let count = 0;
  for (const item of items) if (settled(item)) count += 1;
  let excess = count - kept;
  if (excess <= 0) return items;
  return items.filter((item) => !(settled(item) && excess-- > 0));
}
