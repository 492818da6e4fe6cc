import type { SchedulerFacts } from '../domain/index.js';
import type { AgentDoc } from './agent-doc.js';

/** Projects an agent document onto the facts every contract reads. Never reads a summary back. */
export function factsOf(doc: AgentDoc): SchedulerFacts {
  return {
    status: doc.state.status,
    current_run_id: doc.state.current_run_id,
    turn_index: doc.state.turn_index,
    last_turn_terminal: doc.last_turn_terminal,
    runtime_error: doc.runtime_error,
    current_work_item_id: doc.state.current_work_item_id,
    queue: {
      queued: doc.queue.filter((m) => m.status === 'queued').length,
      interrupted: doc.queue.filter((m) => m.status === 'interrupted').length,
    },
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
      .filter((w) => w.status === 'active' || w.status === 'triggered')
      .map((w) => ({ id: w.id, kind: w.kind, status: w.status, work_item_id: w.work_item_id, subject_ref: w.subject_ref })),
    tasks: doc.tasks.map((t) => ({ id: t.id, status: t.status, work_item_id: t.work_item_id })),
    active_timers: doc.timers.filter((t) => t.status === 'active').length,
    pending_wake_hint: doc.pending_wake_hint !== null,
    prior_closure: doc.last_closure,
  };
}
