import type { AuthorityClass, MessageKind, MessageOrigin, Priority, SchedulerDecisionKind } from '../../src/domain/index.js';

/**
 * What may share a turn (issue 18, "a turn drains what it may"; holon-reference §3 and §5).
 *
 * A turn starts on the head of the queue (highest lane, FIFO within) and takes the messages that
 * follow it in the same order while each may join; the first that may not ends the batch, so the
 * batch is always a prefix of the queue's order and no message runs ahead of one it ranks behind.
 * While the turn runs, its runner takes more at its safe points (ref §3: "while a turn runs it is
 * drained at safe points"), and there only an operator interjection joins.
 *
 * The rules, first match wins:
 * 1. the turn holds `bound` messages → `batch_full`;
 * 2. the head is reduced without a model turn → `reducer_only_turn`: a reducer-only turn reduces
 *    its one message and writes its terminal record (ref §5, "a terminal turn record is still
 *    written" per message);
 * 3. the candidate's own decision is not a model turn (no re-entry, or the agent stopped) →
 *    `candidate_reducer_only`: it is reduced in a turn of its own;
 * 4. the candidate is bound to a work item the head is not bound to → `other_work_item`: the
 *    actions of a turn bind to one work item (the head's), and an explicit binding is never
 *    re-bound; an unbound candidate joins the head's work;
 * 5. at a safe point, a candidate that is not an operator interjection (kind operator_prompt,
 *    origin operator, authority operator_instruction, priority interject: ref §3) →
 *    `not_an_interjection`: it waits for the next turn;
 * 6. otherwise it joins: `drained_at_turn_start`, or `operator_interjection` at a safe point.
 *
 * Every member keeps its own continuation resolution and decision; the authority class of each
 * message travels with it to the runner (the envelope), so trust is not merged by sharing a turn.
 */

/** What the rule reads of a message: its envelope's routing fields and its own decision. */
export interface TurnMember {
  kind: MessageKind;
  origin: Pick<MessageOrigin, 'kind'>;
  authority_class: AuthorityClass;
  priority: Priority;
  work_item_id: string | null;
  /** The contract's decision for this message (`decideForMessage`). */
  decision: SchedulerDecisionKind;
}

/** Where the candidate would join: the claim that starts the turn, or a safe point of the running turn. */
export type JoinPoint = 'turn_start' | 'safe_point';

export interface TurnSoFar {
  head: TurnMember;
  /** Messages the turn holds already (the head included). */
  size: number;
  /** The most messages one turn may hold (`RuntimeOptions.turnMaxMessages`). */
  bound: number;
  at: JoinPoint;
}

export type JoinVerdict =
  | { join: true; reason: 'drained_at_turn_start' | 'operator_interjection' }
  | { join: false; reason: 'batch_full' | 'reducer_only_turn' | 'candidate_reducer_only' | 'other_work_item' | 'not_an_interjection' };

/** Ref §3: operator interjection = operator_prompt + origin operator + operator_instruction + interject. */
export function isOperatorInterjection(message: Pick<TurnMember, 'kind' | 'origin' | 'authority_class' | 'priority'>): boolean {
  return message.kind === 'operator_prompt' && message.origin.kind === 'operator' && message.authority_class === 'operator_instruction' && message.priority === 'interject';
}

/** Whether `candidate` may join the turn (see the rules above). */
export function mayJoinTurn(turn: TurnSoFar, candidate: TurnMember): JoinVerdict {
  if (turn.size >= turn.bound) return { join: false, reason: 'batch_full' };
  if (turn.head.decision !== 'start_model_turn') return { join: false, reason: 'reducer_only_turn' };
  if (candidate.decision !== 'start_model_turn') return { join: false, reason: 'candidate_reducer_only' };
  if (candidate.work_item_id !== null && candidate.work_item_id !== turn.head.work_item_id) return { join: false, reason: 'other_work_item' };
  if (turn.at === 'safe_point') {
    return isOperatorInterjection(candidate) ? { join: true, reason: 'operator_interjection' } : { join: false, reason: 'not_an_interjection' };
  }
  return { join: true, reason: 'drained_at_turn_start' };
}
