import { DomainError, type CreateTimerRequest, type TimerRecord } from '../../domain/index.js';
import type { AgentDoc } from '../agent/agent-doc.js';
import { admitMessage } from '../agent/messages.js';
import type { Tx } from '../agent/tx.js';
import { newId } from '../clock.js';
import { findTimer } from './lookups.js';
import { endWait, triggerWait, waitsOn } from './waits.js';

/** The in-process alarms that fire durable timers (implemented by `host/alarms.ts`). */
export interface Alarms {
  arm(agentId: string, timerId: string, dueAt: string): void;
  disarm(agentId: string, timerId: string): void;
}

/** Durable timers: records in the agent's document; an alarm per active timer fires it. */
export class TimerRecords {
  constructor(private readonly alarms: Alarms) {}

  /** A new active timer; its alarm is armed once the timer is durable. */
  create(tx: Tx, request: Pick<CreateTimerRequest, 'duration_ms'> & Partial<Pick<CreateTimerRequest, 'interval_ms' | 'summary'>>): TimerRecord {
    const now = tx.now;
    const due = new Date(now.getTime() + request.duration_ms).toISOString();
    const timer: TimerRecord = {
      id: newId('tmr'),
      agent_id: tx.cell.id,
      created_at: now.toISOString(),
      duration_ms: request.duration_ms,
      interval_ms: request.interval_ms ?? null,
      status: 'active',
      summary: request.summary ?? null,
      next_fire_at: due,
      last_fired_at: null,
      fire_count: 0,
    };
    tx.doc.timers.push(timer);
    tx.emit('timer_created', { ...timer });
    tx.onCommit(() => this.alarms.arm(tx.cell.id, timer.id, due));
    return timer;
  }

  /** Cancels an active timer; a wait on it could never end now, so it ends with the timer. */
  cancelRecord(tx: Tx, timer: TimerRecord): void {
    timer.status = 'cancelled';
    timer.next_fire_at = null;
    this.alarms.disarm(tx.cell.id, timer.id);
    tx.emit('timer_cancelled', { timer_id: timer.id });
    for (const wait of waitsOn(tx, 'timer', timer.id)) endWait(tx, wait, { status: 'cancelled', reason: 'timer_cancelled' });
  }

  /** CancelTimer by request: a completed timer refuses, a cancelled one is answered as it is. */
  cancel(tx: Tx, timerId: string): TimerRecord {
    const timer = findTimer(tx.doc, timerId);
    if (timer.status === 'completed') throw new DomainError('timer_completed', `timer ${timerId} already completed`);
    if (timer.status === 'active') this.cancelRecord(tx, timer);
    return timer;
  }

  /** Cancels every active timer of the agent (termination). */
  cancelAll(tx: Tx): void {
    for (const timer of tx.doc.timers) if (timer.status === 'active') this.cancelRecord(tx, timer);
  }

  /**
   * Fires the timer once per due time: the commit advances `next_fire_at`, so a replay is a
   * no-op. Its tick is queued (unless the agent is stopped) and triggers the wait on it. Returns
   * the next due time of an interval timer, to arm once this is durable.
   */
  fire(tx: Tx, timerId: string, dueAt: string): string | null {
    const timer = tx.doc.timers.find((t) => t.id === timerId);
    if (!timer || timer.status !== 'active' || timer.next_fire_at !== dueAt) return null;
    const now = tx.now;
    timer.fire_count += 1;
    timer.last_fired_at = now.toISOString();
    if (timer.interval_ms) {
      timer.next_fire_at = new Date(Math.max(Date.parse(dueAt), now.getTime() - timer.interval_ms) + timer.interval_ms).toISOString();
    } else {
      timer.status = 'completed';
      timer.next_fire_at = null;
    }
    tx.emit('timer_fired', { timer_id: timerId, due_at: dueAt, fire_count: timer.fire_count });
    if (tx.doc.state.status !== 'stopped') {
      const wait = waitsOn(tx, 'timer', timerId).find((w) => w.status === 'active');
      if (wait) triggerWait(tx, wait);
      admitMessage(tx.doc, { kind: 'timer_tick', origin: { kind: 'timer', timer_id: timerId }, authority_class: 'runtime_instruction', priority: 'next', body: { type: 'text', text: timer.summary ?? `timer ${timerId} fired` }, work_item_id: wait?.work_item_id ?? null, idempotency_key: `timer:${timerId}:${dueAt}` }, now);
      tx.emit('message_queued', { kind: 'timer_tick', timer_id: timerId });
    }
    return timer.next_fire_at;
  }

  /** Arms the alarm of every active timer of a loaded agent. */
  armAll(doc: AgentDoc): void {
    for (const timer of doc.timers) {
      if (timer.status === 'active' && timer.next_fire_at) this.alarms.arm(doc.identity.agent_id, timer.id, timer.next_fire_at);
    }
  }
}
