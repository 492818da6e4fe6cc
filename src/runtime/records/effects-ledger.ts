import type { EffectKind, EffectRecord } from '../../domain/index.js';
import { appendRecord, type AgentDoc } from '../agent/agent-doc.js';
import type { Tx } from '../agent/tx.js';

/**
 * The effects ledger: an external side effect is recorded `started` before it runs and finished
 * after, so a crash in between leaves it in doubt — resolved on recovery, never silently re-run.
 */

/** The ledger key of a command task's start. */
export const startCommandKey = (taskId: string): string => `start_command:${taskId}`;

/** The ledger key of the result a child agent sends its invoker. */
export const parentResultKey = (taskId: string): string => `emit_parent_result:${taskId}`;

/** What a child agent's result carries to its invoker's task (the `emit_parent_result` detail). */
export interface ParentResult {
  parent_agent_id: string;
  task_id: string;
  failed: boolean;
  text: string;
}

export function findEffect(doc: AgentDoc, key: string): EffectRecord | undefined {
  return doc.effects.find((e) => e.idempotency_key === key);
}

export function startEffect(tx: Tx, key: string, kind: EffectKind, detail: Record<string, unknown>): void {
  appendRecord(tx.doc, 'effects', { idempotency_key: key, agent_id: tx.cell.id, kind, status: 'started', started_at: tx.now.toISOString(), finished_at: null, detail });
}

export function finishEffect(tx: Tx, effect: EffectRecord, status: 'done' | 'failed', detail: Record<string, unknown> = {}): void {
  effect.status = status;
  effect.finished_at = tx.now.toISOString();
  effect.detail = { ...effect.detail, ...detail };
}

/**
 * Recovery: effects left `started` by a crash. A parent result is idempotent on the receiving
 * side (a terminal task ignores it), so it is handed to `resend`; any other effect is resolved as
 * in doubt (a started command's task becomes interrupted).
 */
export function resolveInDoubt(tx: Tx, resend: (effect: EffectRecord, result: ParentResult) => void): void {
  for (const effect of tx.doc.effects) {
    if (effect.status !== 'started') continue;
    if (effect.kind === 'emit_parent_result') {
      resend(effect, effect.detail as unknown as ParentResult);
      continue;
    }
    effect.status = 'in_doubt_resolved';
    effect.finished_at = tx.now.toISOString();
    effect.detail = { ...effect.detail, resolution: effect.kind === 'start_command' ? 'task_interrupted' : 'reconciled_on_recovery' };
    tx.emit('effect_recorded', { ...effect });
  }
}
