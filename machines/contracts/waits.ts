import { ACTIVE_WAIT_STATUSES } from '../../src/domain/index.js';
import type { MessageEnvelope, SchedulerFacts } from '../../src/domain/index.js';

export type WaitFact = SchedulerFacts['waits'][number];

/** Holon-reference §7.1: only `active` and `triggered` waits are unresolved; the rest are history. */
export function isActiveWait(wait: WaitFact): boolean {
  return ACTIVE_WAIT_STATUSES.includes(wait.status);
}

/** Unresolved waits owned by one work item. */
export function activeWaitsOf(work_item_id: string, facts: SchedulerFacts): WaitFact[] {
  return facts.waits.filter((wait) => wait.work_item_id === work_item_id && isActiveWait(wait));
}

/** Unresolved agent-level waits (no owning work item): they shape closure and decisions, never posture. */
export function activeAgentWaits(facts: SchedulerFacts): WaitFact[] {
  return facts.waits.filter((wait) => wait.work_item_id === null && isActiveWait(wait));
}

/** What of a message the wait matcher reads (holon-reference §6.8 `message_matches_wait_condition`). */
export type MatchedMessage = Pick<MessageEnvelope, 'kind' | 'origin' | 'task_id' | 'metadata'>;

/** The wait's side of the match: its kind and the resource it names (a task, timer or trigger id). */
export type MatchedWait = Pick<WaitFact, 'kind' | 'subject_ref'>;

/** The capability a message came through: a callback's trigger, or the trigger of a callback wake hint. */
export function externalTriggerOf(message: MatchedMessage): string | null {
  if (message.origin.kind === 'callback') return message.origin.descriptor_id;
  const hint = message.metadata['wake_hint'];
  if (hint !== null && typeof hint === 'object' && 'external_trigger_id' in hint && typeof hint.external_trigger_id === 'string') {
    return hint.external_trigger_id;
  }
  return null;
}

const EXTERNAL_EVENTS: ReadonlySet<MessageEnvelope['kind']> = new Set(['webhook_event', 'channel_event', 'callback_event']);

/** A wait that names no resource takes any trigger of its kind; one that does, only that resource's. */
function names(wait: MatchedWait, resource: string | null): boolean {
  return wait.subject_ref === null || wait.subject_ref === resource;
}

/**
 * Whether `message` satisfies `wait` (holon-reference §6.8): a task result its task's wait, an
 * operator prompt an operator wait, a timer tick its timer's wait, an external event (or a wake
 * hint that came through a capability) an external wait on that trigger, any other system tick a
 * system wait — and a work-queue tick never any wait (the scheduler's own reactivation).
 */
export function waitMatchesMessage(wait: MatchedWait, message: MatchedMessage): boolean {
  switch (wait.kind) {
    case 'task':
      return message.kind === 'task_result' && names(wait, message.task_id);
    case 'operator':
      return message.kind === 'operator_prompt';
    case 'timer':
      return message.kind === 'timer_tick' && message.origin.kind === 'timer' && names(wait, message.origin.timer_id);
    case 'external': {
      const trigger = externalTriggerOf(message);
      if (EXTERNAL_EVENTS.has(message.kind)) return names(wait, trigger);
      return message.kind === 'system_tick' && trigger !== null && names(wait, trigger);
    }
    case 'system':
      return message.kind === 'system_tick' && !isWorkQueueTick(message) && externalTriggerOf(message) === null;
  }
}

function isWorkQueueTick(message: MatchedMessage): boolean {
  return message.origin.kind === 'system' && message.origin.subsystem === 'work_queue';
}

/** Why an unresolved wait can never end (nothing that could end it can happen any more). */
export type StrandedReason = 'subject_missing' | 'task_ended' | 'timer_ended';

/** What the runtime knows of the task or timer a wait names. */
export interface WaitSubject {
  /** The record still exists. */
  found: boolean;
  /** It will deliver nothing more: a terminal task, a completed or cancelled timer. */
  ended: boolean;
  /** What it delivered (a task result, a timer tick) is queued and not yet claimed: that claim ends the wait. */
  delivery_pending: boolean;
}

/**
 * Seed 003: a wait is a promise that some trigger will come. Only a wait on one named task or
 * timer can lose its trigger for good: the task ended (or its record is gone) without a result on
 * the way. An operator, external or system wait, or one naming no resource, can always still be
 * satisfied (a prompt, an enqueue, a wake hint, a new task or timer).
 */
export function strandedReason(wait: MatchedWait, subject: WaitSubject): StrandedReason | null {
  if ((wait.kind !== 'task' && wait.kind !== 'timer') || wait.subject_ref === null) return null;
  if (!subject.found) return 'subject_missing';
  if (!subject.ended || subject.delivery_pending) return null;
  return wait.kind === 'task' ? 'task_ended' : 'timer_ended';
}
