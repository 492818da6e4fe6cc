import { z } from 'zod';
import { derivePosture } from '../../../machines/contracts/index.js';
import { AgentListEntry, TERMINAL_TASK_STATUSES, TRANSITIONAL_PHASES } from '../../domain/index.js';
import type { AgentDoc } from './agent-doc.js';
import { factsOf } from './facts.js';
import { tallyOf } from './queue-tally.js';
import { strandedWaits } from './stranded-waits.js';

/** Phases whose protocol a crash leaves open: `recoverAgent` runs their effect again. */
const TRANSITIONAL: ReadonlySet<string> = new Set(TRANSITIONAL_PHASES);

/**
 * What the runtime needs about an agent without loading its document, committed with every
 * commit that changes it (`Commit.roster`): boot reads these instead of the documents, the
 * capability URL lookup reads the token hashes, and `ListAgents` is served from `listing`.
 * Kept small (< 300 bytes of JSON for a sleeping agent): 100,000 of them stay resident.
 */
export const AgentRoster = z.object({
  /** `ListAgents`' entry, minus the id the store already keys it by. */
  listing: AgentListEntry.omit({ agent_id: true }),
  /** Boot must load and recover the agent (see {@link needsRecovery}); the others load on first access. */
  needs_recovery: z.boolean(),
  /** SHA-256 of the agent's active capability tokens, base64url (revoked ones are refused either way). */
  trigger_hashes: z.array(z.string()),
  /** Earliest `next_fire_at` of the agent's active timers; absent without one. */
  next_timer_at: z.string().optional(),
  /** Waits nothing can end any more (`strandedWaits`); absent when there are none, as there should be. */
  stranded: z.array(z.object({ wait_id: z.string(), reason: z.string() })).optional(),
});
export type AgentRoster = z.infer<typeof AgentRoster>;

export function rosterOf(doc: AgentDoc): AgentRoster {
  const listing = {
    status: doc.state.status,
    phase: doc.state.phase,
    scheduling_posture: derivePosture(factsOf(doc)),
    pending: doc.state.pending,
    current_run_id: doc.state.current_run_id,
    waiting_reason: doc.last_closure?.waiting_reason ?? null,
  };
  let next: string | null = null;
  for (const timer of doc.timers) {
    if (timer.status === 'active' && timer.next_fire_at && (next === null || Date.parse(timer.next_fire_at) < Date.parse(next))) next = timer.next_fire_at;
  }
  const stranded = doc.waits.length === 0 ? [] : strandedWaits(doc);
  return {
    listing,
    needs_recovery: needsRecovery(doc),
    trigger_hashes: doc.triggers.filter((t) => t.status === 'active').map(compactHashOf),
    ...(next === null ? {} : { next_timer_at: next }),
    ...(stranded.length === 0 ? {} : { stranded }),
  };
}

/** Trigger record → its compact hash: records are shared by the versions that leave them alone. */
const compacted = new WeakMap<object, string>();

function compactHashOf(trigger: AgentDoc['triggers'][number]): string {
  let hash = compacted.get(trigger);
  if (hash === undefined) compacted.set(trigger, (hash = compactHash(trigger.token_hash)));
  return hash;
}

/** A hex SHA-256 (as documents store token hashes) in base64url: 43 characters instead of 64. */
export function compactHash(hexHash: string): string {
  return Buffer.from(hexHash, 'hex').toString('base64url');
}

/**
 * Whether the agent has something a restart must act on — exactly what `recoverAgent` and the
 * first scheduler step after it handle: an effect started but not recorded as finished, a task
 * not terminal, a current run, or a phase the scheduler moves on by itself (transitional, created,
 * active, or asleep with work queued). A quiet agent (asleep with nothing to do, stopped,
 * terminated) is not recovered at boot: it loads when first accessed.
 */
export function needsRecovery(doc: AgentDoc): boolean {
  if (doc.effects.some((e) => e.status === 'started')) return true;
  if (doc.tasks.some((t) => !TERMINAL_TASK_STATUSES.includes(t.status))) return true;
  if (doc.state.current_run_id || TRANSITIONAL.has(doc.state.phase)) return true;
  if (doc.state.phase === 'terminated' || doc.state.status === 'stopped') return false;
  if (doc.state.phase !== 'sleeping') return true;
  return !doc.refusal && (tallyOf(doc.queue).pending > 0 || doc.pending_wake_hint !== null);
}
