import type { SchedulerFacts } from '../../src/domain/index.js';
import { isTerminalTask } from './task-phase.js';
import { workSignal } from './work-item.js';

/** Queued entries and interrupted entries awaiting replay both count as input (§4.1 row 3). */
export function hasQueuedInput(facts: SchedulerFacts): boolean {
  return facts.queue.queued + facts.queue.interrupted > 0;
}

export function hasRunnableWork(facts: SchedulerFacts): boolean {
  return workSignal(facts) !== null;
}

/** A task that is queued, running or cancelling. */
export function hasActiveTasks(facts: SchedulerFacts): boolean {
  return facts.tasks.some((task) => !isTerminalTask(task.status));
}
