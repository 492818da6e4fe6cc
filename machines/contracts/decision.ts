import type {
  ContinuationResolution,
  DecisionBoundary,
  SchedulerDecision,
  SchedulerDecisionKind,
  SchedulerFacts,
} from '../../src/domain/index.js';
import { hasActiveTasks, hasQueuedInput } from './predicates.js';
import { isTerminalTask } from './task-phase.js';
import { activeAgentWaits, activeWaitsOf } from './waits.js';
import { waitingWorkItem, workSignal } from './work-item.js';
import type { WaitingSchedulingState, WaitingWorkItem } from './work-item.js';

export { hasActiveTasks, hasQueuedInput, hasRunnableWork } from './predicates.js';

type DecisionExtras = Partial<Omit<SchedulerDecision, 'kind' | 'reason' | 'liveness_only'>>;

/**
 * Seed 003: `model_reentry=false` means the wake is a liveness check — the scheduler looks at the
 * posture again without bringing the model back in. So a decision is liveness-only exactly when it
 * does not re-enter the model: Stop, the WaitFor* decisions, Sleep, StayIdle, Noop, a message
 * reduced without a turn, and the system tick of a system wait (holon-reference §6.2, §6.3).
 */
function decision(kind: SchedulerDecisionKind, reason: string, extras: DecisionExtras = {}): SchedulerDecision {
  const model_reentry = extras.model_reentry ?? false;
  return { kind, reason, evidence: [], ...extras, model_reentry, liveness_only: !model_reentry };
}

function stop(boundary: DecisionBoundary, extras: DecisionExtras = {}): SchedulerDecision {
  return decision('stop', 'agent_stopped', { boundary, ...extras });
}

/** Ref §6.3: what the idle scheduler does about each kind of waiting work item. */
const WAIT_DECISION_OF: Readonly<Record<WaitingSchedulingState, readonly [SchedulerDecisionKind, string]>> = {
  waiting_operator: ['wait_for_operator', 'work_item_needs_input'],
  waiting_task: ['wait_for_task', 'work_item_waiting_task'],
  waiting_external: ['wait_for_external_change', 'work_item_waiting_external'],
  waiting_timer: ['wait_for_timer', 'work_item_waiting_timer'],
  // A system wait is kept alive by ticks rather than waited out; the tick only records, it carries no content.
  waiting_system: ['emit_system_tick', 'work_item_system_wait'],
};

function workItemWaitDecision(waiting: WaitingWorkItem, facts: SchedulerFacts): SchedulerDecision {
  const [kind, reason] = WAIT_DECISION_OF[waiting.state];
  const taskWait = activeWaitsOf(waiting.item.id, facts).find((wait) => wait.kind === 'task');
  return decision(kind, reason, {
    work_item_id: waiting.item.id,
    // Only a waiting_task item can hold a task wait: task outranks every other wait kind.
    ...(taskWait?.subject_ref ? { task_id: taskWait.subject_ref } : {}),
  });
}

/**
 * Ref §6.3. None while interrupted entries await replay or runnable work exists. Agent-level waits read as an
 * external change, except a wait on a task result, which is a task wait (as in closure). The reference's "operator wait whose recheck_at has passed yields no decision"
 * exception is not modelled: the facts carry no recheck deadlines.
 */
export function waitDecision(facts: SchedulerFacts): SchedulerDecision | null {
  if (facts.queue.interrupted > 0 || workSignal(facts) !== null) return null;
  const agentWaits = activeAgentWaits(facts);
  // Same reading as closure: an explicit agent-level wait on a task result is a task wait (seed 000).
  const taskWait = agentWaits.find((wait) => wait.kind === 'task');
  if (taskWait) {
    return decision('wait_for_task', 'active_agent_task_wait', {
      ...(taskWait.subject_ref ? { task_id: taskWait.subject_ref } : {}),
      evidence: [`active_agent_task_wait=${agentWaits.filter((wait) => wait.kind === 'task').length}`],
    });
  }
  if (agentWaits.length > 0) {
    return decision('wait_for_external_change', 'active_agent_waiting_intents', {
      evidence: [`active_agent_waiting_intents=${agentWaits.length}`],
    });
  }
  if (facts.active_timers > 0) {
    return decision('wait_for_timer', 'active_timers', { evidence: [`active_timers=${facts.active_timers}`] });
  }
  const waiting = waitingWorkItem(facts);
  return waiting === null ? null : workItemWaitDecision(waiting, facts);
}

/**
 * Seed 000 sleep guard: the agent may rest only when nothing would wake it at once. Running tasks keep it
 * awake (a task is compute, so the agent stays `awaiting_task`); waits and timers do not, since sleeping
 * keeps its wake conditions.
 */
export function canSleep(facts: SchedulerFacts): boolean {
  return (
    facts.status !== 'stopped' &&
    facts.current_run_id === null &&
    !hasQueuedInput(facts) &&
    workSignal(facts) === null &&
    !hasActiveTasks(facts) &&
    !facts.pending_wake_hint
  );
}

/**
 * Ref §6.4, with two additions so that a `sleep` decision always agrees with `canSleep`: active tasks give
 * `wait_for_task` (the agent stays awaiting_task) and a pending wake hint gives a noop (the idle tick emits it).
 */
export function idleBoundaryDecision(facts: SchedulerFacts): SchedulerDecision {
  const boundary: DecisionBoundary = 'run_loop_idle';
  if (facts.status === 'stopped') return stop(boundary);
  const wait = waitDecision(facts);
  if (wait !== null) return { ...wait, boundary };
  const signal = workSignal(facts);
  if (signal !== null) {
    return decision('emit_system_tick', 'runnable_work', {
      model_reentry: true,
      work_item_id: signal.work_item_id,
      boundary,
      evidence: [`reactivation_mode=${signal.reactivation_mode}`],
    });
  }
  if (hasQueuedInput(facts)) return decision('noop', 'queue_not_empty', { boundary });
  if (facts.current_run_id !== null) return decision('noop', 'turn_in_progress', { boundary });
  if (facts.status === 'asleep') return decision('stay_idle', 'already_asleep', { boundary });
  const task = facts.tasks.find((candidate) => !isTerminalTask(candidate.status));
  if (task !== undefined) return decision('wait_for_task', 'active_tasks', { task_id: task.id, boundary });
  if (facts.pending_wake_hint) return decision('noop', 'pending_wake_hint', { boundary });
  return decision('sleep', 'no_pending_scheduler_facts', { boundary });
}

/**
 * Ref §6.2 rules 1–2: the decision for one admitted message, given its continuation resolution;
 * `null` for a message with no continuation trigger (a kind that is only reduced, ref §5).
 */
export function decideForMessage(
  facts: SchedulerFacts,
  resolution: ContinuationResolution | null,
  message_id: string,
): SchedulerDecision {
  const boundary: DecisionBoundary = 'message_processing';
  if (facts.status === 'stopped') return stop(boundary, { message_id });
  const queue = [`queue_len=${facts.queue.queued + facts.queue.interrupted}`, `turn_in_progress=${facts.current_run_id !== null}`];
  if (resolution === null) return decision('reduce_message_only', 'no_continuation_trigger', { message_id, boundary, evidence: queue });
  return decision(resolution.model_reentry ? 'start_model_turn' : 'reduce_message_only', resolution.class, {
    model_reentry: resolution.model_reentry,
    message_id,
    boundary,
    evidence: [`trigger_kind=${resolution.trigger_kind}`, ...queue],
  });
}

export interface IdleSignal {
  kind: 'wake_hint' | 'continue_active' | 'queued_available';
  duplicate: boolean;
  /** continue_active only: the previous message re-entered the model, so the same item is not re-ticked yet. */
  suppressed?: boolean;
}

/** Ref §6.2 rule 3. Wait facts never hold back a wake hint; they do hold back work ticks. */
export function decideIdleSignal(facts: SchedulerFacts, signal: IdleSignal): SchedulerDecision {
  const boundary: DecisionBoundary = 'idle_tick';
  if (facts.status === 'stopped') return stop(boundary);
  if (facts.current_run_id !== null) return decision('noop', 'turn_in_progress', { boundary });
  if (signal.kind !== 'wake_hint') {
    const wait = waitDecision(facts);
    if (wait !== null) return { ...wait, boundary };
  }
  if (signal.kind === 'continue_active' && signal.suppressed === true) {
    return decision('noop', 'continue_active_suppressed_after_model_reentry_continuation', { boundary });
  }
  if (signal.duplicate) return decision('noop', `duplicate_${signal.kind}`, { boundary });
  const work = workSignal(facts);
  return decision('emit_system_tick', signal.kind, {
    model_reentry: true,
    boundary,
    ...(signal.kind !== 'wake_hint' && work !== null ? { work_item_id: work.work_item_id } : {}),
  });
}
