import { deriveClosure, isActiveWait, waitMatchesMessage } from '../../../machines/contracts/index.js';
import type { MessageEnvelope, WaitConditionRecord } from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';
import { factsOf } from '../agent/facts.js';

/** How an unresolved wait ends: resolved by the message that satisfied it (or its subject's end), or cancelled. */
export type WaitEnd = { status: 'resolved'; reason: string; message_id?: string } | { status: 'cancelled'; reason: string };

/**
 * Ends an unresolved wait: its record, its event, the blocker of its work item, and the continuation
 * actor's mirror of it (which moves to the agent's next unresolved wait, or to idle). Every path that
 * ends a wait goes through here, so records and statechart cannot drift apart.
 */
export function endWait(tx: Tx, wait: WaitConditionRecord, end: WaitEnd): void {
  const now = tx.now.toISOString();
  wait.status = end.status;
  wait.updated_at = now;
  if (end.status === 'resolved') {
    wait.resolved_at = now;
    wait.trigger_message_id = end.message_id ?? null;
    tx.emit('wait_resolved', { wait_id: wait.id, reason: end.reason, ...(end.message_id ? { message_id: end.message_id } : {}) });
  } else {
    tx.emit('wait_cancelled', { wait_id: wait.id, reason: end.reason });
  }
  if (wait.work_item_id) {
    const item = tx.doc.work_items.find((w) => w.id === wait.work_item_id);
    if (item) item.blocked_by = null;
  }
  // Ended between turns (cancelled, its task stopped): a closure that waited is re-derived from the
  // facts as they are now, so the summary and the next trigger's classification do not read a wait
  // that is gone. (A turn's own claim and end derive it themselves.)
  if (!tx.doc.state.current_run_id && tx.doc.last_closure?.outcome === 'waiting') tx.doc.last_closure = deriveClosure(factsOf(tx.doc));
  const mirrored = tx.continuationWait();
  if (mirrored?.waitId !== wait.id) return;
  const next = tx.doc.waits.findLast(isActiveWait);
  tx.tellChild(
    'continuation',
    next ? { type: 'WAIT.SET', waitId: next.id, kind: next.kind, reason: next.waiting_for, resource: next.subject_ref, workItemId: next.work_item_id } : { type: 'WAIT.CANCEL' },
  );
}

/** Cancels the unresolved waits owned by `owner` (a work item id, or `null` for the agent's own). */
export function cancelOwnedWaits(tx: Tx, owner: string | null, reason: string): void {
  for (const wait of tx.doc.waits) if (wait.work_item_id === owner && isActiveWait(wait)) endWait(tx, wait, { status: 'cancelled', reason });
}

/** The waits `message` satisfies (holon-reference §6.8) resolve, in the commit that claims it. */
export function resolveWaitsFor(tx: Tx, message: MessageEnvelope): void {
  for (const wait of tx.doc.waits) {
    if (isActiveWait(wait) && waitMatchesMessage(wait, message)) endWait(tx, wait, { status: 'resolved', reason: 'trigger_claimed', message_id: message.id });
  }
}

/**
 * The task `taskId` ended. With its result queued, the waits on it are triggered (the claim of
 * the result resolves them); without one (a stopped or terminating agent takes no result), nothing
 * will come, so they resolve now.
 */
export function taskEnded(tx: Tx, taskId: string, resultQueued: boolean): void {
  for (const wait of tx.doc.waits) {
    if (wait.kind !== 'task' || wait.subject_ref !== taskId || !isActiveWait(wait)) continue;
    if (!resultQueued) endWait(tx, wait, { status: 'resolved', reason: 'task_ended_without_result' });
    else if (wait.status === 'active') {
      wait.status = 'triggered';
      wait.updated_at = tx.now.toISOString();
    }
  }
}
