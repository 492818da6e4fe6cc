import { isTerminalTask } from '../../../machines/contracts/index.js';
import type { MessageEnvelope } from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';
import type { AgentCells } from '../host/cells.js';
import { findEffect, finishEffect, parentResultKey, startEffect, type ParentResult } from '../records/effects-ledger.js';
import { finishTaskRecord } from '../records/tasks.js';

/**
 * The result half of InvokeAgent: a child agent finished the turn its invoker asked for, and the
 * result re-enters the parent's task (the request half is in `task-requests.ts`). The result is in
 * the child's effects ledger before it is sent, and marked done once the parent recorded it.
 */
export class InvocationResults {
  constructor(private readonly cells: Pick<AgentCells, 'mutate'>) {}

  /** A turn of `message` ended: if an invoker asked for it, its result goes to the invoker once this commit is durable. */
  notifyInvoker(tx: Tx, message: MessageEnvelope, failed: boolean, text: string): void {
    const invokedBy = message.metadata['invoked_by'] as { agent_id: string; task_id: string } | undefined;
    if (!invokedBy) return;
    const key = parentResultKey(invokedBy.task_id);
    if (findEffect(tx.doc, key)) return;
    const result: ParentResult = { parent_agent_id: invokedBy.agent_id, task_id: invokedBy.task_id, failed, text: text.slice(0, 8000) };
    startEffect(tx, key, 'emit_parent_result', { ...result });
    tx.onCommit(() => this.resend(tx.cell.id, key, { ...result, text }));
  }

  /** Sends a recorded result (again: recovery resends one left in doubt; the parent ignores a duplicate). */
  resend(childId: string, key: string, result: ParentResult): void {
    void this.deliver(childId, key, result).catch(() => undefined);
  }

  private async deliver(childId: string, key: string, result: ParentResult): Promise<void> {
    await this.cells.mutate(result.parent_agent_id, async (tx) => {
      const task = tx.doc.tasks.find((t) => t.id === result.task_id);
      if (!task || isTerminalTask(task.status)) return;
      task.result_text = result.text.slice(0, 8000);
      tx.tellChild(task.id, { type: 'EXITED', exitCode: result.failed ? 1 : 0 });
      finishTaskRecord(tx, task, { status: result.failed ? 'failed' : 'completed', exit_code: null, reason: result.failed ? 'child_turn_failed' : null });
    }, { allowTerminated: true });
    await this.cells.mutate(childId, async (tx) => {
      const effect = findEffect(tx.doc, key);
      if (!effect || effect.status !== 'started') return;
      finishEffect(tx, effect, 'done');
      tx.emit('effect_recorded', { ...effect });
    }, { allowTerminated: true });
  }
}
