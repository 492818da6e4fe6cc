import type {
  AgentSchedulingPosture,
  PostureProjection,
  SchedulerFacts,
  WorkItemSchedulingState,
} from '../../src/domain/index.js';
import { hasQueuedInput } from './predicates.js';
import { activeWaitsOf } from './waits.js';
import { projectWorkItems, workSignal } from './work-item.js';
import type { ProjectedWorkItem } from './work-item.js';

/**
 * Seed 000 posture rows fed by work-item waits, in precedence order. Work-item timer and system waits and
 * manual blockers are distinct scheduler states but project as `blocked` (seed 000 key contract).
 */
const WAITING_POSTURES: ReadonlyArray<readonly [AgentSchedulingPosture, readonly WorkItemSchedulingState[]]> = [
  ['waiting_for_task', ['waiting_task']],
  ['waiting_for_external', ['waiting_external']],
  ['waiting_for_operator', ['waiting_operator']],
  ['blocked', ['waiting_timer', 'waiting_system', 'blocked']],
];

function taskIdOf(projected: ProjectedWorkItem, facts: SchedulerFacts): Partial<PostureProjection> {
  const taskWait = activeWaitsOf(projected.item.id, facts).find((wait) => wait.kind === 'task');
  return taskWait?.subject_ref ? { task_id: taskWait.subject_ref } : {};
}

function waitingPosture(facts: SchedulerFacts): PostureProjection | null {
  const items = projectWorkItems(facts);
  for (const [posture, states] of WAITING_POSTURES) {
    const found = items.find(({ scheduling }) => states.includes(scheduling.scheduling_state));
    if (found !== undefined) {
      // Only a waiting_for_task item can hold a task wait, so only it ever gets a task_id.
      return { posture, reason: found.scheduling.reason_code, work_item_id: found.item.id, ...taskIdOf(found, facts) };
    }
  }
  return null;
}

/**
 * Seed 000 scheduling posture, first match wins (holon-reference §4.1). Agent-level waits, timers and tasks
 * do not shape posture: they only affect closure and decisions. `active_turn` carries no work item because
 * the facts have no turn attribution and focus must not stand in for it.
 */
export function derivePosture(facts: SchedulerFacts): PostureProjection {
  if (facts.status === 'stopped') return { posture: 'stopped', reason: 'agent_stopped' };
  if (facts.current_run_id !== null) {
    return { posture: 'active_turn', reason: 'active_turn', run_id: facts.current_run_id };
  }
  if (hasQueuedInput(facts)) return { posture: 'has_queued_input', reason: 'queued_input' };
  const signal = workSignal(facts);
  if (signal !== null) {
    const reason = signal.reactivation_mode === 'continue_active' ? 'current_runnable' : 'queued_runnable';
    return { posture: 'has_runnable_work', reason, work_item_id: signal.work_item_id };
  }
  return waitingPosture(facts) ?? { posture: 'idle', reason: 'no_pending_scheduler_facts' };
}
