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
