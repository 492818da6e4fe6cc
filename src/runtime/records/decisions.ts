import type { SchedulerDecision } from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';

/**
 * Records a scheduler decision (holon-reference §6): the agent's `last_decision` and a
 * `scheduler_decision` event, in the operation's commit. The decision itself comes from the
 * contracts (`machines/contracts/decision.ts`), never from here.
 */
export function recordDecision(tx: Tx, decision: SchedulerDecision): void {
  tx.doc.last_decision = decision;
  tx.emit('scheduler_decision', { ...decision });
}
