import { describe, expect, it } from 'vitest';
import { isOperatorInterjection, mayJoinTurn } from '../../machines/contracts/index.js';
import type { JoinVerdict, TurnMember, TurnSoFar } from '../../machines/contracts/index.js';
import { named } from './fixtures.js';

/** An operator interjection (ref §3), deciding a model turn. */
function prompt(patch: Partial<TurnMember> = {}): TurnMember {
  return { kind: 'operator_prompt', origin: { kind: 'operator' }, authority_class: 'operator_instruction', priority: 'interject', work_item_id: null, decision: 'start_model_turn', ...patch };
}

function webhook(patch: Partial<TurnMember> = {}): TurnMember {
  return { kind: 'webhook_event', origin: { kind: 'webhook' }, authority_class: 'integration_signal', priority: 'normal', work_item_id: null, decision: 'start_model_turn', ...patch };
}

function turn(patch: Partial<TurnSoFar> = {}): TurnSoFar {
  return { head: prompt(), size: 1, bound: 64, at: 'turn_start', ...patch };
}

interface Row {
  rule: string;
  turn: TurnSoFar;
  candidate: TurnMember;
  expected: JoinVerdict;
}

const rows: Row[] = [
  {
    rule: 'issue18 rule 1 a turn holding the bound takes no more, even an interjection',
    turn: turn({ size: 64, bound: 64 }),
    candidate: prompt(),
    expected: { join: false, reason: 'batch_full' },
  },
  {
    rule: 'issue18 rule 1 boundary: one under the bound still takes one',
    turn: turn({ size: 63, bound: 64 }),
    candidate: prompt(),
    expected: { join: true, reason: 'drained_at_turn_start' },
  },
  {
    rule: 'ref§5 rule 2 a reducer-only head reduces its one message: nothing joins it',
    turn: turn({ head: webhook({ decision: 'reduce_message_only' }) }),
    candidate: prompt(),
    expected: { join: false, reason: 'reducer_only_turn' },
  },
  {
    rule: 'ref§5 rule 2 a stopped head (decision stop) takes nothing either',
    turn: turn({ head: prompt({ decision: 'stop' }) }),
    candidate: prompt({ decision: 'stop' }),
    expected: { join: false, reason: 'reducer_only_turn' },
  },
  {
    rule: 'ref§5 rule 3 a candidate reduced without a model turn (a liveness-only tick) gets a turn of its own',
    turn: turn(),
    candidate: { kind: 'system_tick', origin: { kind: 'system' }, authority_class: 'runtime_instruction', priority: 'next', work_item_id: null, decision: 'reduce_message_only' },
    expected: { join: false, reason: 'candidate_reducer_only' },
  },
  {
    rule: 'issue18 rule 4 a candidate bound to another work item than the head does not join',
    turn: turn({ head: prompt({ work_item_id: 'w1' }) }),
    candidate: prompt({ work_item_id: 'w2' }),
    expected: { join: false, reason: 'other_work_item' },
  },
  {
    rule: 'issue18 rule 4 a bound candidate does not join an unbound head (its binding is never dropped)',
    turn: turn(),
    candidate: prompt({ work_item_id: 'w2' }),
    expected: { join: false, reason: 'other_work_item' },
  },
  {
    rule: 'issue18 rule 4 a candidate bound to the head\'s work item joins',
    turn: turn({ head: webhook({ work_item_id: 'w1' }) }),
    candidate: webhook({ work_item_id: 'w1', priority: 'background' }),
    expected: { join: true, reason: 'drained_at_turn_start' },
  },
  {
    rule: 'issue18 rule 4 an unbound candidate joins the head\'s work item',
    turn: turn({ head: prompt({ work_item_id: 'w1' }) }),
    candidate: prompt(),
    expected: { join: true, reason: 'drained_at_turn_start' },
  },
  {
    rule: 'ref§3 rule 5 at a safe point a webhook event waits for the next turn',
    turn: turn({ at: 'safe_point' }),
    candidate: webhook(),
    expected: { join: false, reason: 'not_an_interjection' },
  },
  {
    rule: 'ref§3 rule 5 at a safe point an operator prompt below the interject lane is no interjection',
    turn: turn({ at: 'safe_point' }),
    candidate: prompt({ priority: 'next' }),
    expected: { join: false, reason: 'not_an_interjection' },
  },
  {
    rule: 'ref§3 rule 5 at a safe point an interject-lane message that is not an operator prompt is no interjection',
    turn: turn({ at: 'safe_point' }),
    candidate: { kind: 'internal_followup', origin: { kind: 'system' }, authority_class: 'runtime_instruction', priority: 'interject', work_item_id: null, decision: 'start_model_turn' },
    expected: { join: false, reason: 'not_an_interjection' },
  },
  {
    rule: 'ref§3 rule 6 at a safe point an operator interjection joins the running turn',
    turn: turn({ at: 'safe_point', head: webhook() }),
    candidate: prompt(),
    expected: { join: true, reason: 'operator_interjection' },
  },
  {
    rule: 'issue18 rule 6 at the turn start a model-turn message of any origin joins (webhook after a prompt)',
    turn: turn(),
    candidate: webhook({ priority: 'background' }),
    expected: { join: true, reason: 'drained_at_turn_start' },
  },
  {
    rule: 'issue18 rule 6 at the turn start a contentful system tick joins',
    turn: turn(),
    candidate: { kind: 'system_tick', origin: { kind: 'system' }, authority_class: 'runtime_instruction', priority: 'next', work_item_id: null, decision: 'start_model_turn' },
    expected: { join: true, reason: 'drained_at_turn_start' },
  },
];

describe('mayJoinTurn', () => {
  it.each(named(rows))('%s', (_rule, { turn: soFar, candidate, expected }) => {
    expect(mayJoinTurn(soFar, candidate)).toStrictEqual(expected);
  });
});

describe('isOperatorInterjection', () => {
  it('ref§3 needs all four: operator_prompt, origin operator, operator_instruction, interject', () => {
    expect(isOperatorInterjection(prompt())).toBe(true);
    expect(isOperatorInterjection(prompt({ kind: 'channel_event' }))).toBe(false);
    expect(isOperatorInterjection(prompt({ origin: { kind: 'system' } }))).toBe(false);
    expect(isOperatorInterjection(prompt({ authority_class: 'runtime_instruction' }))).toBe(false);
    expect(isOperatorInterjection(prompt({ priority: 'next' }))).toBe(false);
  });
});
