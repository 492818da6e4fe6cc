import { z } from 'zod';
import {
  AgentConfig,
  AgentIdentity,
  AgentState,
  ClosureDecision,
  EffectRecord,
  ExternalTriggerRecord,
  MessageEnvelope,
  SchedulerDecision,
  Snapshot,
  TaskRecord,
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

export const RECENT_KEYS_LIMIT = 512;
const PROCESSED_MESSAGES_KEPT = 64;
const FINISHED_TASKS_KEPT = 256;
const SNAPSHOTS_KEPT = 8;
const SETTLED_EFFECTS_KEPT = 256;
const RECENT_TRANSITIONS_KEPT = 64;
const OPERATOR_TRANSITIONS_KEPT = 512;
const RUNTIME_TRANSITION_ID = /^tr_[0-9a-f]{20}$/;

/** Drops history that no decision reads any more, so documents (and commits) stay small. */
export function prune(doc: AgentDoc): void {
  const settled = doc.queue.filter((m) => m.status !== 'queued' && m.status !== 'dequeued' && m.status !== 'interrupted');
  if (settled.length > PROCESSED_MESSAGES_KEPT) {
    const drop = new Set(settled.slice(0, settled.length - PROCESSED_MESSAGES_KEPT).map((m) => m.id));
    doc.queue = doc.queue.filter((m) => !drop.has(m.id));
  }
  const finished = doc.tasks.filter((t) => ['completed', 'failed', 'cancelled', 'interrupted'].includes(t.status));
  if (finished.length > FINISHED_TASKS_KEPT) {
    const drop = new Set(finished.slice(0, finished.length - FINISHED_TASKS_KEPT).map((t) => t.id));
    doc.tasks = doc.tasks.filter((t) => !drop.has(t.id));
  }
  if (doc.snapshots.length > SNAPSHOTS_KEPT) doc.snapshots = doc.snapshots.slice(-SNAPSHOTS_KEPT);
  const settledEffects = doc.effects.filter((e) => e.status !== 'started');
  if (settledEffects.length > SETTLED_EFFECTS_KEPT) {
    const drop = new Set(settledEffects.slice(0, settledEffects.length - SETTLED_EFFECTS_KEPT).map((e) => e.idempotency_key));
    doc.effects = doc.effects.filter((e) => !drop.has(e.idempotency_key));
  }
  if (doc.recent_keys.length > RECENT_KEYS_LIMIT) doc.recent_keys = doc.recent_keys.slice(-RECENT_KEYS_LIMIT);
  // Every record is in the event log; the document keeps the recent ones, plus those a client
  // named (their transition_id must replay), so it does not grow with the agent's age.
  const records = Object.values(doc.transitions).sort((a, b) => a.seq - b.seq);
  if (records.length > RECENT_TRANSITIONS_KEPT) {
    const recent = new Set(records.slice(-RECENT_TRANSITIONS_KEPT).map((t) => t.transition_id));
    // Ids the runtime minted (`tr_…`) are never replayed; a client's must keep answering with its record.
    const operators = records.filter((t) => !RUNTIME_TRANSITION_ID.test(t.transition_id)).slice(-OPERATOR_TRANSITIONS_KEPT).map((t) => t.transition_id);
    for (const id of operators) recent.add(id);
    doc.transitions = Object.fromEntries(records.filter((t) => recent.has(t.transition_id)).map((t) => [t.transition_id, t]));
  }
}
