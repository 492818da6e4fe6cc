import type { ClosureDecision, SchedulerFacts, WaitingReason, WorkSignal } from '../../src/domain/index.js';
import { isTerminalTask } from './task-phase.js';
import { activeAgentWaits } from './waits.js';
import { projectWorkItems, waitingWorkItem, workSignal } from './work-item.js';
import type { WaitingSchedulingState } from './work-item.js';

/** Row 9 mapping; a system wait has no reason of its own and reads as an external change (ref §4.3). */
const REASON_OF_WAITING_STATE: Readonly<Record<WaitingSchedulingState, WaitingReason>> = {
  waiting_task: 'awaiting_task_result',
  waiting_external: 'awaiting_external_change',
  waiting_timer: 'awaiting_timer',
  waiting_operator: 'awaiting_operator_input',
  waiting_system: 'awaiting_external_change',
};

/** Facts shown on every decision. Active tasks appear here only: they are metadata, never a waiting cause. */
function contextEvidence(facts: SchedulerFacts): string[] {
  const activeTasks = facts.tasks.filter((task) => !isTerminalTask(task.status));
  return [
    ...(activeTasks.length > 0 ? [`active_tasks=${activeTasks.length}`] : []),
    ...(facts.status === 'asleep' ? ['runtime_sleeping'] : []),
  ];
}

function currentItemAwaitsOperator(facts: SchedulerFacts): boolean {
  return projectWorkItems(facts).some(
    ({ scheduling }) => scheduling.is_current && scheduling.scheduling_state === 'waiting_operator',
  );
}

/**
 * Seed 000 closure at turn end (holon-reference §4.3 rows 1–10, first match wins). Runnable work beats every
 * wait; active tasks alone never make the closure waiting; `waiting_reason` is set iff the outcome is waiting.
 */
export function deriveClosure(facts: SchedulerFacts): ClosureDecision {
  const context = contextEvidence(facts);
  const decide = (
    outcome: ClosureDecision['outcome'],
    waiting_reason: WaitingReason | null,
    marker: string,
    work_signal: WorkSignal | null = null,
  ): ClosureDecision => ({
    outcome,
    waiting_reason,
    work_signal,
    runtime_posture: facts.status === 'asleep' ? 'sleeping' : 'awake',
    evidence: [marker, ...context],
  });

  if (facts.runtime_error) return decide('failed', null, 'runtime_error');
  if (facts.current_run_id !== null) return decide('waiting', 'awaiting_external_change', 'turn_in_progress');
  const terminal = facts.last_turn_terminal;
  if (terminal === 'failed' || terminal === 'aborted') return decide('failed', null, `turn_terminal_${terminal}`);
  if (facts.turn_index > 0 && terminal === null) {
    return decide('waiting', 'awaiting_external_change', 'turn_terminal_missing');
  }
  const signal = workSignal(facts);
  if (signal !== null) return decide('continuable', null, 'runnable_work_present', signal);
  if (currentItemAwaitsOperator(facts)) {
    return decide('waiting', 'awaiting_operator_input', 'current_work_item_waiting_operator');
  }
  const agentWaits = activeAgentWaits(facts);
  // Seed 000: a task blocks only when a wait represents it. An explicit agent-level wait on a task
  // result is such a wait, so it reads as awaiting_task_result (holon-reference §4.3 row 7 would
  // say external change; the seed's rule is the more specific one).
  const agentTaskWaits = agentWaits.filter((wait) => wait.kind === 'task').length;
  if (agentTaskWaits > 0) {
    return decide('waiting', 'awaiting_task_result', `active_agent_task_wait=${agentTaskWaits}`);
  }
  if (agentWaits.length > 0) {
    return decide('waiting', 'awaiting_external_change', `active_agent_waiting_intents=${agentWaits.length}`);
  }
  if (facts.active_timers > 0) return decide('waiting', 'awaiting_timer', `active_timers=${facts.active_timers}`);
  const waiting = waitingWorkItem(facts);
  if (waiting !== null) {
    const marker = `waiting_work_item=${waiting.item.id}:${waiting.state}`;
    return decide('waiting', REASON_OF_WAITING_STATE[waiting.state], marker);
  }
  return decide('completed', null, 'no_waiting_condition');
}
