import { describe, expect, it } from 'vitest';
import { ContinuationResolution } from '../../src/domain/index.js';
import type { ClosureDecision, ContinuationClass, WaitingReason } from '../../src/domain/index.js';
import { resolveContinuation } from '../../machines/contracts/index.js';
import type { ContinuationTrigger } from '../../machines/contracts/index.js';
import { named } from './fixtures.js';

function prior(outcome: ClosureDecision['outcome'], waiting_reason: WaitingReason | null = null): ClosureDecision {
  return { outcome, waiting_reason, work_signal: null, runtime_posture: 'sleeping', evidence: [] };
}

const waitingFor = (reason: WaitingReason): ClosureDecision => prior('waiting', reason);

interface Row {
  rule: string;
  trigger: ContinuationTrigger;
  prior: ClosureDecision | null;
  expected: {
    class: ContinuationClass;
    model_reentry: boolean;
    matched: boolean;
    evidence: string;
  };
}

const bare = (kind: ContinuationTrigger['kind']): ContinuationTrigger => ({ kind, contentful: false });
const content = (kind: ContinuationTrigger['kind']): ContinuationTrigger => ({ kind, contentful: true });
const rejoin: ContinuationTrigger = { kind: 'task_result', contentful: true, task_terminal: true, same_work_item: true };

const local = { class: 'local_continuation', model_reentry: true, matched: false, evidence: 'continues_without_wait' } as const;
const idleLiveness = { class: 'liveness_only', model_reentry: false, matched: false, evidence: 'no_model_visible_content' } as const;
const expectedWait = { class: 'resume_expected_wait', model_reentry: true, matched: true, evidence: 'expected_wait_resumed' } as const;
const matchedLiveness = {
  class: 'liveness_only',
  model_reentry: false,
  matched: true,
  evidence: 'expected_wait_without_model_content',
} as const;
const mismatch = {
  class: 'liveness_only',
  model_reentry: false,
  matched: false,
  evidence: 'does_not_satisfy_waiting_reason',
} as const;

const rows: Row[] = [
  // Part A: the prior turn was not waiting (or there was none).
  { rule: 'ref§5 A operator_input without a prior wait → local_continuation', trigger: bare('operator_input'), prior: null, expected: local },
  { rule: 'ref§5 A timer_fire without a prior wait → local_continuation', trigger: bare('timer_fire'), prior: prior('completed'), expected: local },
  {
    rule: 'seed003 class local_continuation: internal_followup continues without sleeping',
    trigger: bare('internal_followup'),
    prior: prior('continuable'),
    expected: local,
  },
  { rule: 'ref§5 A contentful external_event → local_continuation', trigger: content('external_event'), prior: null, expected: local },
  { rule: 'ref§5 A contentless external_event → liveness_only', trigger: bare('external_event'), prior: null, expected: idleLiveness },
  { rule: 'ref§5 A contentful system_tick → local_continuation', trigger: content('system_tick'), prior: prior('failed'), expected: local },
  {
    rule: 'seed003 class liveness_only: a contentless wake (system_tick) carries nothing for the model',
    trigger: bare('system_tick'),
    prior: null,
    expected: idleLiveness,
  },
  {
    rule: 'seed003 class task_result_reentry: terminal task result rejoins the same work item while not waiting for it',
    trigger: rejoin,
    prior: prior('completed'),
    expected: {
      class: 'task_result_reentry',
      model_reentry: true,
      matched: false,
      evidence: 'terminal_task_result_rejoins_work_item',
    },
  },
  {
    rule: 'ref§5 A terminal task result of another work item → liveness_only',
    trigger: { kind: 'task_result', contentful: true, task_terminal: true, same_work_item: false },
    prior: null,
    expected: idleLiveness,
  },
  {
    rule: 'ref§5 A non-terminal task result of the same work item → liveness_only',
    trigger: { kind: 'task_result', contentful: true, task_terminal: false, same_work_item: true },
    prior: null,
    expected: idleLiveness,
  },
  {
    rule: 'ref§5 A task result without terminal/binding flags → liveness_only',
    trigger: content('task_result'),
    prior: null,
    expected: idleLiveness,
  },
  // Part B rule 1: the trigger matches the prior waiting reason.
  {
    rule: 'seed003 class resume_expected_wait: operator_input while awaiting_operator_input',
    trigger: bare('operator_input'),
    prior: waitingFor('awaiting_operator_input'),
    expected: expectedWait,
  },
  {
    rule: 'ref§5 B1 terminal same-item task_result while awaiting_task_result → resume_expected_wait',
    trigger: rejoin,
    prior: waitingFor('awaiting_task_result'),
    expected: expectedWait,
  },
  {
    rule: 'ref§5 B1 contentful external_event while awaiting_external_change → resume_expected_wait',
    trigger: content('external_event'),
    prior: waitingFor('awaiting_external_change'),
    expected: expectedWait,
  },
  {
    rule: 'ref§5 B1 contentful system_tick while awaiting_external_change → resume_expected_wait',
    trigger: content('system_tick'),
    prior: waitingFor('awaiting_external_change'),
    expected: expectedWait,
  },
  {
    rule: 'ref§5 B1 timer_fire while awaiting_timer → resume_expected_wait',
    trigger: bare('timer_fire'),
    prior: waitingFor('awaiting_timer'),
    expected: expectedWait,
  },
  {
    rule: 'ref§5 B1 non-terminal task_result while awaiting_task_result → matched but liveness_only',
    trigger: { kind: 'task_result', contentful: true, task_terminal: false, same_work_item: true },
    prior: waitingFor('awaiting_task_result'),
    expected: matchedLiveness,
  },
  {
    rule: 'ref§5 B1 terminal task_result of another item while awaiting_task_result → matched but liveness_only',
    trigger: { kind: 'task_result', contentful: true, task_terminal: true, same_work_item: false },
    prior: waitingFor('awaiting_task_result'),
    expected: matchedLiveness,
  },
  {
    rule: 'ref§5 B1 contentless external_event while awaiting_external_change → matched but liveness_only',
    trigger: bare('external_event'),
    prior: waitingFor('awaiting_external_change'),
    expected: matchedLiveness,
  },
  {
    rule: 'ref§5 B1 contentless system_tick (wake hint) while awaiting_external_change → matched but liveness_only',
    trigger: bare('system_tick'),
    prior: waitingFor('awaiting_external_change'),
    expected: matchedLiveness,
  },
  // Part B rules 2–5: the trigger does not match.
  {
    rule: 'seed003 class resume_override: operator_input while awaiting_task_result (B2)',
    trigger: bare('operator_input'),
    prior: waitingFor('awaiting_task_result'),
    expected: { class: 'resume_override', model_reentry: true, matched: false, evidence: 'operator_input_overrides_wait' },
  },
  {
    rule: 'ref§5 B3 contentful system_tick while awaiting_task_result → liveness_only',
    trigger: content('system_tick'),
    prior: waitingFor('awaiting_task_result'),
    expected: {
      class: 'liveness_only',
      model_reentry: false,
      matched: false,
      evidence: 'system_tick_does_not_satisfy_waiting_reason',
    },
  },
  {
    rule: 'ref§5 B4 terminal same-item task_result while awaiting_external_change → resume_override',
    trigger: rejoin,
    prior: waitingFor('awaiting_external_change'),
    expected: { class: 'resume_override', model_reentry: true, matched: false, evidence: 'task_result_overrides_wait' },
  },
  {
    rule: 'ref§5 B4 needs a task_result: task flags on an external_event do not override the wait',
    trigger: { kind: 'external_event', contentful: false, task_terminal: true, same_work_item: true },
    prior: waitingFor('awaiting_task_result'),
    expected: mismatch,
  },
  {
    rule: 'ref§5 B5 timer_fire while awaiting_task_result → liveness_only',
    trigger: bare('timer_fire'),
    prior: waitingFor('awaiting_task_result'),
    expected: mismatch,
  },
  {
    rule: 'ref§5 B5 internal_followup while awaiting anything → liveness_only',
    trigger: content('internal_followup'),
    prior: waitingFor('awaiting_operator_input'),
    expected: mismatch,
  },
  {
    rule: 'ref§5 B5 unbound terminal task_result while awaiting_external_change → liveness_only',
    trigger: { kind: 'task_result', contentful: true, task_terminal: true, same_work_item: false },
    prior: waitingFor('awaiting_external_change'),
    expected: mismatch,
  },
  {
    rule: 'ref§5 B5 contentful external_event while awaiting_timer → liveness_only',
    trigger: content('external_event'),
    prior: waitingFor('awaiting_timer'),
    expected: mismatch,
  },
  {
    rule: 'ref§5 B5 contentless system_tick while awaiting_timer → liveness_only (B3 needs content)',
    trigger: bare('system_tick'),
    prior: waitingFor('awaiting_timer'),
    expected: mismatch,
  },
];

describe('resolveContinuation', () => {
  it.each(named(rows))('%s', (_rule, { trigger, prior: before, expected }) => {
    const result = resolveContinuation(trigger, before);
    const want: ContinuationResolution = {
      trigger_kind: trigger.kind,
      class: expected.class,
      model_reentry: expected.model_reentry,
      prior_closure_outcome: before?.outcome ?? 'completed',
      prior_waiting_reason: before?.waiting_reason ?? null,
      matched_waiting_reason: expected.matched,
      evidence: [expected.evidence],
    };
    expect(result).toStrictEqual(want);
    expect(ContinuationResolution.safeParse(result).success).toBe(true);
  });

  it('ref§5 A no prior closure is read as prior outcome completed', () => {
    expect(resolveContinuation(bare('operator_input'), null).prior_closure_outcome).toBe('completed');
  });

  it('ref§5 A a non-waiting prior never reports a waiting reason', () => {
    const inconsistent = { ...prior('completed'), waiting_reason: 'awaiting_timer' as const };
    const result = resolveContinuation(bare('timer_fire'), inconsistent);
    expect(result).toMatchObject({ class: 'local_continuation', prior_waiting_reason: null, matched_waiting_reason: false });
  });

  it('ref§5 B a waiting prior without a reason matches nothing', () => {
    const result = resolveContinuation(bare('timer_fire'), prior('waiting', null));
    expect(result).toStrictEqual({
      trigger_kind: 'timer_fire',
      class: 'liveness_only',
      model_reentry: false,
      prior_closure_outcome: 'waiting',
      prior_waiting_reason: null,
      matched_waiting_reason: false,
      evidence: ['does_not_satisfy_waiting_reason'],
    });
  });
});
