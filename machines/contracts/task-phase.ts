import { TERMINAL_TASK_STATUSES } from '../../src/domain/index.js';
import type { TaskStatus } from '../../src/domain/index.js';

export type TaskPhaseRank = 0 | 1 | 2 | 3;

const RANK: Readonly<Record<TaskStatus, TaskPhaseRank>> = {
  queued: 0,
  running: 1,
  cancelling: 2,
  completed: 3,
  failed: 3,
  cancelled: 3,
  interrupted: 3,
};

/** Holon-reference §5 end: queued 0 < running 1 < cancelling 2 < terminal 3. */
export function taskPhaseRank(status: TaskStatus): TaskPhaseRank {
  return RANK[status];
}

/** Seed 004: completed, failed, cancelled and interrupted are terminal. */
export function isTerminalTask(status: TaskStatus): boolean {
  return TERMINAL_TASK_STATUSES.includes(status);
}

/**
 * Whether an incoming task record supersedes the stored one (§5 end, §9.2). Only a strictly later phase does:
 * an older or equal phase is stale, a terminal record never reopens, and a second, different terminal status is
 * refused. Phases may be skipped (queued → cancelling) because the latest record wins even when an
 * intermediate update was lost; `legalTaskTransition` is the stricter diagram check for the task machine.
 */
export function acceptsTaskUpdate(current: TaskStatus, next: TaskStatus): boolean {
  return !isTerminalTask(current) && taskPhaseRank(next) > taskPhaseRank(current);
}

/**
 * Seed 004's lifecycle arrows, made explicit:
 * - queued → running, and queued → cancelled | failed (spawn failure) | interrupted (stop or restart before start);
 *   a task cannot complete without running.
 * - running → completed | failed | interrupted, → cancelling (TaskStop with a live handle), and → cancelled
 *   directly: seed 004 says TaskStop "may first enter Cancelling", and ref §9.3 cancels handle-less stops at once.
 * - cancelling → cancelled | interrupted, and → completed | failed: the process may exit on its own before the
 *   stop signal lands, and the real exit status is kept rather than rewritten as cancelled.
 * - Terminal statuses have no way out, so they have no entry here.
 */
const ARROWS: Readonly<Partial<Record<TaskStatus, readonly TaskStatus[]>>> = {
  queued: ['running', 'cancelled', 'failed', 'interrupted'],
  running: ['completed', 'failed', 'interrupted', 'cancelling', 'cancelled'],
  cancelling: ['cancelled', 'interrupted', 'completed', 'failed'],
};

export function legalTaskTransition(from: TaskStatus, to: TaskStatus): boolean {
  return ARROWS[from]?.includes(to) ?? false;
}
