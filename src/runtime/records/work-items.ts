import { DomainError, type CompleteWorkItemRequest, type PickWorkItemRequest, type UpdateWorkItemRequest, type WorkItemRecord } from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';
import { newId } from '../clock.js';
import { findWorkItem } from './lookups.js';
import { cancelOwnedWaits } from './waits.js';

/** A new open work item; the first one becomes the agent's current item. */
export function createWorkItemRecord(tx: Tx, objective: string): WorkItemRecord {
  const now = tx.now.toISOString();
  const item: WorkItemRecord = { id: newId('wi'), agent_id: tx.cell.id, revision: 1, objective, state: 'open', plan_status: 'draft', blocked_by: null, recheck_at: null, result_summary: null, created_at: now, updated_at: now };
  tx.doc.work_items.push(item);
  if (!tx.doc.state.current_work_item_id) tx.doc.state.current_work_item_id = item.id;
  tx.emit('work_item_created', { work_item_id: item.id, objective });
  return item;
}

/** Completes an item: its waits are cancelled and it stops being current. */
export function completeWorkItemRecord(tx: Tx, item: WorkItemRecord, report: string): void {
  const now = tx.now.toISOString();
  item.state = 'completed';
  item.result_summary = report;
  item.revision += 1;
  item.updated_at = now;
  item.blocked_by = null;
  cancelOwnedWaits(tx, item.id, 'work_item_completed');
  if (tx.doc.state.current_work_item_id === item.id) tx.doc.state.current_work_item_id = null;
  tx.emit('work_item_completed', { work_item_id: item.id });
}

export function updateWorkItem(tx: Tx, workItemId: string, req: UpdateWorkItemRequest): WorkItemRecord {
  const item = openItem(tx, workItemId, 'is');
  if (req.objective !== undefined) item.objective = req.objective;
  if (req.plan_status !== undefined) item.plan_status = req.plan_status;
  if (req.blocked_by !== undefined) item.blocked_by = req.blocked_by;
  item.revision += 1;
  item.updated_at = tx.now.toISOString();
  tx.emit('work_item_updated', { work_item_id: item.id, revision: item.revision });
  return item;
}

/** PickWorkItem: the item becomes current; `clear_blocker` also cancels its waits. */
export function pickWorkItem(tx: Tx, workItemId: string, req: PickWorkItemRequest): WorkItemRecord {
  const item = openItem(tx, workItemId, 'completed');
  if (req.clear_blocker) {
    item.blocked_by = null;
    cancelOwnedWaits(tx, item.id, 'pick_work_item_clear_blocker');
  }
  tx.doc.state.current_work_item_id = item.id;
  item.updated_at = tx.now.toISOString();
  tx.emit('work_item_updated', { work_item_id: item.id, picked: true, reason: req.reason ?? null });
  return item;
}

/** CompleteWorkItem by request: completing a completed item changes nothing. */
export function completeWorkItem(tx: Tx, workItemId: string, req: CompleteWorkItemRequest): WorkItemRecord {
  const item = findWorkItem(tx.doc, workItemId);
  if (item.state !== 'completed') completeWorkItemRecord(tx, item, req.report_text);
  return item;
}

/** The item, which must be open (`illegal_transition` names its state, or says `completed`). */
function openItem(tx: Tx, workItemId: string, refusal: 'is' | 'completed'): WorkItemRecord {
  const item = findWorkItem(tx.doc, workItemId);
  if (item.state !== 'open') throw new DomainError('illegal_transition', refusal === 'is' ? `work item ${workItemId} is ${item.state}` : `work item ${workItemId} is completed`);
  return item;
}
