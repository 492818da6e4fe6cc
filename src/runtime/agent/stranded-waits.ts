import { isActiveWait, isTerminalTask, strandedReason, type StrandedReason, type WaitSubject } from '../../../machines/contracts/index.js';
import type { WaitConditionRecord } from '../../domain/index.js';
import type { AgentDoc } from './agent-doc.js';

/** An unresolved wait that nothing can end any more, and why (see {@link strandedReason}). */
export interface StrandedWait {
  wait_id: string;
  reason: StrandedReason | 'statechart_waits_on_ended_wait';
}

const PENDING: ReadonlySet<string> = new Set(['queued', 'dequeued', 'interrupted']);

/**
 * Every stranded wait of the agent: a wait on a task or timer that ended with nothing on the way
 * to end the wait, and the continuation statechart waiting on a wait whose record has ended.
 */
export function strandedWaits(doc: AgentDoc): StrandedWait[] {
  const out: StrandedWait[] = [];
  for (const wait of doc.waits) {
    if (!isActiveWait(wait)) continue;
    const reason = strandedReason(wait, subjectOf(doc, wait));
    if (reason) out.push({ wait_id: wait.id, reason });
  }
  const mirrored = continuationWaitOf(doc.machine);
  if (mirrored && !doc.waits.some((w) => w.id === mirrored && isActiveWait(w))) out.push({ wait_id: mirrored, reason: 'statechart_waits_on_ended_wait' });
  return out;
}

function subjectOf(doc: AgentDoc, wait: WaitConditionRecord): WaitSubject {
  const ref = wait.subject_ref;
  if (wait.kind === 'task') {
    const task = doc.tasks.find((t) => t.id === ref);
    return { found: task !== undefined, ended: task !== undefined && isTerminalTask(task.status), delivery_pending: doc.queue.some((m) => m.task_id === ref && PENDING.has(m.status)) };
  }
  const timer = doc.timers.find((t) => t.id === ref);
  return {
    found: timer !== undefined,
    ended: timer !== undefined && timer.status !== 'active',
    delivery_pending: doc.queue.some((m) => m.origin.kind === 'timer' && m.origin.timer_id === ref && PENDING.has(m.status)),
  };
}

/** The wait id the persisted continuation actor holds while `waiting`, read from the agent's persisted snapshot. */
function continuationWaitOf(machine: unknown): string | null {
  const child = (machine as { children?: Record<string, { snapshot?: { value?: { wait?: unknown }; context?: { wait?: { waitId?: unknown } | null } } }> } | null)?.children?.['continuation']?.snapshot;
  const waitId = child?.context?.wait?.waitId;
  return child?.value?.wait === 'waiting' && typeof waitId === 'string' ? waitId : null;
}
