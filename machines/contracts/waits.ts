import { ACTIVE_WAIT_STATUSES } from '../../src/domain/index.js';
import type { SchedulerFacts } from '../../src/domain/index.js';

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
