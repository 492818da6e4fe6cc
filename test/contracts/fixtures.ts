import { emptyFacts } from '../../src/domain/index.js';
import type { SchedulerFacts, TaskStatus, WaitConditionKind } from '../../src/domain/index.js';
import type { WaitFact, WorkItemFact } from '../../machines/contracts/index.js';

/** Facts of an awake, idle agent with nothing at all, overridden by `patch`. */
export function facts(patch: Partial<SchedulerFacts> = {}): SchedulerFacts {
  return { ...emptyFacts(), ...patch };
}

/** An open, ready work item created and updated at `at`. */
export function item(id: string, patch: Partial<WorkItemFact> = {}, at = '2026-01-01T00:00:00.000Z'): WorkItemFact {
  return {
    id,
    state: 'open',
    plan_status: 'ready',
    blocked_by: null,
    revision: 1,
    created_at: at,
    updated_at: at,
    ...patch,
  };
}

/** An active wait; agent-level unless `work_item_id` is given. */
export function wait(kind: WaitConditionKind, patch: Partial<WaitFact> = {}): WaitFact {
  return { id: `${kind}-wait`, kind, status: 'active', work_item_id: null, subject_ref: null, ...patch };
}

export function task(id: string, status: TaskStatus, work_item_id: string | null = null): SchedulerFacts['tasks'][number] {
  return { id, status, work_item_id };
}

export const T1 = '2026-01-01T00:00:01.000Z';
export const T2 = '2026-01-01T00:00:02.000Z';
export const T3 = '2026-01-01T00:00:03.000Z';

/**
 * Rows keyed by their rule name, for `it.each(named(rows))('%s', (_rule, row) => …)`: vitest shortens `$rule`
 * in test titles to 40 characters, while `%s` keeps the full rule name that RULES.md cites.
 */
export function named<Row extends { rule: string }>(rows: readonly Row[]): Array<[string, Row]> {
  return rows.map((row) => [row.rule, row]);
}
