import { isActiveWait, isTerminalTask } from '../../../machines/contracts/index.js';
import type { SchedulerFacts } from '../../domain/index.js';
import type { AgentDoc } from './agent-doc.js';

/**
 * Projects an agent document onto the facts every contract reads. Never reads a summary back.
 * Runs several times per operation, so it builds as little as it can: `tasks` holds the live tasks
 * only (every rule reads only those; a document keeps up to 256 finished ones, and projecting them
 * all made an agent that had run many tasks turn slower), and the queue is counted, not filtered.
 */
export function factsOf(doc: AgentDoc): SchedulerFacts {
  return {
    status: doc.state.status,
    current_run_id: doc.state.current_run_id,
    turn_index: doc.state.turn_index,
    last_turn_terminal: doc.last_turn_terminal,
    runtime_error: doc.runtime_error,
    current_work_item_id: doc.state.current_work_item_id,
    queue: queueCounts(doc.queue),
    work_items: doc.work_items.map((w) => ({
      id: w.id,
      state: w.state,
      plan_status: w.plan_status,
      blocked_by: w.blocked_by,
      revision: w.revision,
      created_at: w.created_at,
      updated_at: w.updated_at,
    })),
    waits: doc.waits
      .filter(isActiveWait)
      .map((w) => ({ id: w.id, kind: w.kind, status: w.status, work_item_id: w.work_item_id, subject_ref: w.subject_ref })),
    tasks: doc.tasks.filter((t) => !isTerminalTask(t.status)).map((t) => ({ id: t.id, status: t.status, work_item_id: t.work_item_id })),
    active_timers: doc.timers.filter((t) => t.status === 'active').length,
    pending_wake_hint: doc.pending_wake_hint !== null,
    prior_closure: doc.last_closure,
  };
}

function queueCounts(queue: AgentDoc['queue']): SchedulerFacts['queue'] {
  let queued = 0;
  let interrupted = 0;
  for (const message of queue) {
    if (message.status === 'queued') queued += 1;
    else if (message.status === 'interrupted') interrupted += 1;
  }
  return { queued, interrupted };
}
