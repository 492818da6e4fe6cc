import { deriveClosure, isActiveWait, isTerminalTask, waitMatchesMessage } from '../../../machines/contracts/index.js';
import { DomainError, WAIT_KIND_OF_WAKE, type CreateWaitRequest, type MessageEnvelope, type WaitConditionRecord } from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';
import { factsOf } from '../agent/facts.js';
import { newId } from '../clock.js';
import { findWait, findWorkItem } from './lookups.js';

/** What a new wait is on (a WaitFor directive, or a CreateWait request). */
export interface NewWait {
  wake: CreateWaitRequest['wake'];
  reason: string;
  resource?: string;
  work_item_id?: string;
  wake_at?: string;
}

/**
 * Records a wait (holon-reference §8.4) and tells the continuation actor. At most one unresolved
 * wait per owner: a new WaitFor replaces the previous one. A wait on a task that already ended
 * triggers at once (its result is queued already).
 */
export function createWaitRecord(tx: Tx, request: NewWait): WaitConditionRecord {
  const now = tx.now.toISOString();
  const owner = request.work_item_id ?? null;
  cancelOwnedWaits(tx, owner, 'wait_for_replaced');
  const wait: WaitConditionRecord = {
    id: newId('wait'),
    agent_id: tx.cell.id,
    work_item_id: owner,
    status: 'active',
    kind: WAIT_KIND_OF_WAKE[request.wake],
    subject_ref: request.resource ?? null,
    waiting_for: request.reason,
    wake_at: request.wake_at ?? null,
    created_at: now,
    updated_at: now,
    resolved_at: null,
    trigger_message_id: null,
  };
  tx.doc.waits.push(wait);
  if (owner) {
    const item = tx.doc.work_items.find((w) => w.id === owner);
    if (item) {
      item.blocked_by = request.reason;
      item.revision += 1;
      item.updated_at = now;
    }
  }
  tx.emit('wait_created', { ...wait });
  if (wait.kind === 'task') {
    const task = tx.doc.tasks.find((t) => t.id === wait.subject_ref);
    if (task && isTerminalTask(task.status)) triggerWait(tx, wait);
  }
  tx.tellChild('continuation', { type: 'WAIT.SET', waitId: wait.id, kind: wait.kind, reason: wait.waiting_for, resource: wait.subject_ref, workItemId: wait.work_item_id });
  return wait;
}

/** CreateWait: a wait whose work item, task or (active) timer exists. */
export function createWait(tx: Tx, req: CreateWaitRequest): WaitConditionRecord {
  if (req.work_item_id) findWorkItem(tx.doc, req.work_item_id);
  if (req.wake === 'task_result' && !tx.doc.tasks.some((t) => t.id === req.resource)) throw new DomainError('task_not_found', `task ${req.resource} not found`);
  if (req.wake === 'timer' && !tx.doc.timers.some((t) => t.id === req.resource && t.status === 'active')) throw new DomainError('timer_not_found', `active timer ${req.resource} not found`);
  return createWaitRecord(tx, { wake: req.wake, reason: req.reason, ...(req.resource ? { resource: req.resource } : {}), ...(req.work_item_id ? { work_item_id: req.work_item_id } : {}), ...(req.wake_at ? { wake_at: req.wake_at } : {}) });
}

/** CancelWait by an operator: an unresolved wait is cancelled; an ended one is answered as it is. */
export function cancelWait(tx: Tx, waitId: string): WaitConditionRecord {
  const wait = findWait(tx.doc, waitId);
  if (isActiveWait(wait)) endWait(tx, wait, { status: 'cancelled', reason: 'cancelled_by_operator' });
  return wait;
}

/** Its trigger arrived (queued): the claim of that message resolves the wait. */
export function triggerWait(tx: Tx, wait: WaitConditionRecord): void {
  wait.status = 'triggered';
  wait.updated_at = tx.now.toISOString();
}

/** The unresolved waits on one task or timer. */
export function waitsOn(tx: Tx, kind: 'task' | 'timer', subject: string): WaitConditionRecord[] {
  return tx.doc.waits.filter((wait) => wait.kind === kind && wait.subject_ref === subject && isActiveWait(wait));
}

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
  for (const wait of waitsOn(tx, 'task', taskId)) {
    if (!resultQueued) endWait(tx, wait, { status: 'resolved', reason: 'task_ended_without_result' });
    else if (wait.status === 'active') triggerWait(tx, wait);
  }
}
