import type {
  ClosureDecision,
  ContinuationClass,
  ContinuationResolution,
  ContinuationTriggerKind,
  WaitingReason,
} from '../../src/domain/index.js';

/** A trigger as built from an admitted message (holon-reference §5 first paragraph). */
export interface ContinuationTrigger {
  kind: ContinuationTriggerKind;
  /** The message carries model-visible content (non-blank text, any JSON, or a wake hint with a reason/body). */
  contentful: boolean;
  /** task_result only: the task's status is terminal. */
  task_terminal?: boolean;
  /** task_result only: the task belongs to the agent's work item being matched. */
  same_work_item?: boolean;
}

/** Seed 003 / ref §5 B1: the waiting reason each trigger kind is expected to satisfy. */
const SATISFIES: Readonly<Partial<Record<ContinuationTriggerKind, WaitingReason>>> = {
  operator_input: 'awaiting_operator_input',
  task_result: 'awaiting_task_result',
  external_event: 'awaiting_external_change',
  system_tick: 'awaiting_external_change',
  timer_fire: 'awaiting_timer',
};

type Verdict = Pick<ContinuationResolution, 'class' | 'model_reentry' | 'evidence'>;

/** Every class but liveness_only brings the model back in. */
function verdict(class_: ContinuationClass, evidence: string): Verdict {
  return { class: class_, model_reentry: class_ !== 'liveness_only', evidence: [evidence] };
}

function isRejoiningTaskResult(trigger: ContinuationTrigger): boolean {
  return trigger.kind === 'task_result' && trigger.task_terminal === true && trigger.same_work_item === true;
}

/**
 * Whether the trigger has something for the model. Operator input, timer fires and the agent's own follow-ups
 * always do; external events and system ticks only with content; a task result only once terminal and bound
 * to the same work item.
 */
function carriesModelContent(trigger: ContinuationTrigger): boolean {
  switch (trigger.kind) {
    case 'operator_input':
    case 'timer_fire':
    case 'internal_followup':
      return true;
    case 'external_event':
    case 'system_tick':
      return trigger.contentful;
    case 'task_result':
      return isRejoiningTaskResult(trigger);
  }
}

/**
 * Part A: the prior turn was not waiting. Seed 003 lists `task_result_reentry` ("a terminal task result
 * re-enters the same WorkItem while the prior turn was not waiting for it"), which the reference code never
 * emits (it says local_continuation). We follow the seed here. A rejoining task result that arrives while the
 * prior turn waited for something else stays `resume_override` (part B rule 4), since it overrides a wait.
 */
function resolveWithoutWait(trigger: ContinuationTrigger): Verdict {
  if (!carriesModelContent(trigger)) return verdict('liveness_only', 'no_model_visible_content');
  return isRejoiningTaskResult(trigger)
    ? verdict('task_result_reentry', 'terminal_task_result_rejoins_work_item')
    : verdict('local_continuation', 'continues_without_wait');
}

/** Part B rules 2–5: a trigger that does not match the prior waiting reason. */
function resolveMismatch(trigger: ContinuationTrigger): Verdict {
  if (trigger.kind === 'operator_input') return verdict('resume_override', 'operator_input_overrides_wait');
  // B3: a contentful system tick could only match an external-change wait, which B1 already handled.
  if (trigger.kind === 'system_tick' && trigger.contentful) {
    return verdict('liveness_only', 'system_tick_does_not_satisfy_waiting_reason');
  }
  if (isRejoiningTaskResult(trigger)) return verdict('resume_override', 'task_result_overrides_wait');
  return verdict('liveness_only', 'does_not_satisfy_waiting_reason');
}

/**
 * Seed 003 continuation resolution (holon-reference §5 parts A and B). A missing prior closure is treated as
 * `completed`: a fresh agent has nothing to resume.
 */
export function resolveContinuation(
  trigger: ContinuationTrigger,
  prior: ClosureDecision | null,
): ContinuationResolution {
  const prior_closure_outcome = prior?.outcome ?? 'completed';
  const base = { trigger_kind: trigger.kind, prior_closure_outcome };
  if (prior?.outcome !== 'waiting') {
    return { ...base, prior_waiting_reason: null, matched_waiting_reason: false, ...resolveWithoutWait(trigger) };
  }
  const prior_waiting_reason = prior.waiting_reason;
  if (SATISFIES[trigger.kind] === prior_waiting_reason) {
    const resumed = carriesModelContent(trigger)
      ? verdict('resume_expected_wait', 'expected_wait_resumed')
      : verdict('liveness_only', 'expected_wait_without_model_content');
    return { ...base, prior_waiting_reason, matched_waiting_reason: true, ...resumed };
  }
  return { ...base, prior_waiting_reason, matched_waiting_reason: false, ...resolveMismatch(trigger) };
}
