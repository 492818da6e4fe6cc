import { isTerminalTask } from '../../../machines/contracts/index.js';
import type { EffectRequest } from '../agent/agent-cell.js';
import { pendingCount } from '../agent/messages.js';
import type { Tx } from '../agent/tx.js';
import type { CommandProcesses } from '../host/processes.js';
import type { EffectFault, ResolvedOptions, RuntimeOptions } from '../options.js';
import { takeSnapshot, verifySnapshot, type SnapshotStamp } from '../records/snapshots.js';
import { finishTaskRecord } from '../records/tasks.js';
import type { TimerRecords } from '../records/timers.js';
import { provisionDefaultTrigger, revokeAllTriggers } from '../records/triggers.js';
import type { Turns } from './turns.js';

type Effect = EffectRequest['effect'];
type Faulty = keyof NonNullable<RuntimeOptions['faults']>;

export interface LifecycleDeps {
  options: Pick<ResolvedOptions, 'faults' | 'effectTimeoutMs'>;
  stamp: SnapshotStamp;
  timers: TimerRecords;
  processes: Pick<CommandProcesses, 'stop' | 'take'>;
  turns: Pick<Turns, 'abortCurrentRun'>;
}

/**
 * The side effects of the seed-002 lifecycle: the agent machine requests one on entering a
 * transitional state (`effect.requested`), and the handler of that effect performs it and answers
 * with its `*.DONE` / `*.FAILED` event, logging the protocol phases on the way. One handler per
 * effect, in a table: a new effect of the machine is a type error until it has one.
 *
 * Every handler but stop's and terminate's changes the agent's records only (a snapshot taken or
 * verified, a trigger provisioned, phases logged), so they may run in a scheduler step built on a
 * head not yet durable (`RunOptions.durableBefore`); stop and terminate stop processes, and wait
 * for the head to be durable first.
 */
export class Lifecycle {
  private readonly handlers: Record<Effect, (tx: Tx, effect: EffectRequest) => Promise<void>> = {
    initialize: (tx, effect) => this.initialize(tx, effect),
    sleep: (tx, effect) => this.sleep(tx, effect),
    wake: (tx, effect) => this.wake(tx, effect),
    recover: (tx, effect) => this.recover(tx, effect),
    evolve: (tx, effect) => this.evolve(tx, effect),
    stop: (tx) => this.stopEffects(tx, 'agent_stopped'),
    terminate: (tx, effect) => this.terminate(tx, effect),
  };

  constructor(private readonly deps: LifecycleDeps) {}

  /** Performs every effect the machine requested during this operation, answering each with its event. */
  async drain(tx: Tx): Promise<void> {
    for (let round = 0; round < 16; round++) {
      const effects = tx.cell.takeEffects();
      if (effects.length === 0) return;
      for (const effect of effects) await this.perform(tx, effect);
    }
  }

  perform(tx: Tx, effect: EffectRequest): Promise<void> {
    return this.handlers[effect.effect](tx, effect);
  }

  private async initialize(tx: Tx, effect: EffectRequest): Promise<void> {
    tx.logPhase('transition_prepared', effect.key);
    const fault = this.injectedFault(tx, 'initialize');
    if (fault) {
      tx.send({ type: 'INITIALIZE.FAILED', reason: fault.reason, recoverable: fault.recoverable ?? false }, { reason: fault.reason, trigger: 'system' });
      return;
    }
    provisionDefaultTrigger(tx);
    takeSnapshot(tx, 'initial', this.deps.stamp);
    tx.logPhase('side_effects_applied', effect.key);
    await tx.flush();
    tx.send({ type: 'INITIALIZE.DONE' }, { reason: 'initialization complete', trigger: 'system' });
  }

  private async sleep(tx: Tx, effect: EffectRequest): Promise<void> {
    tx.logPhase('transition_prepared', effect.key);
    const fault = this.injectedFault(tx, 'sleep');
    if (fault) {
      tx.send({ type: 'SLEEP.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'system' });
      return;
    }
    // Back to sleep after a refused wake: the incompatible snapshot stays the recovery point
    // until it is migrated; a fresh one would hide the refusal.
    if (!tx.doc.refusal) takeSnapshot(tx, 'pre_sleep', this.deps.stamp);
    tx.logPhase('side_effects_applied', effect.key);
    tx.doc.state.sleeping_until = null;
  }

  private async wake(tx: Tx, effect: EffectRequest): Promise<void> {
    tx.logPhase('transition_prepared', effect.key);
    const latest = tx.doc.snapshots.at(-1);
    const verdict = latest ? verifySnapshot(latest, tx.cell.id, tx.doc.identity.identity_version) : null;
    if (!verdict) {
      tx.send({ type: 'WAKE.FAILED', reason: 'no recovery point' }, { reason: 'no snapshot to wake from', trigger: 'system' });
    } else if (verdict.ok) {
      tx.logPhase('side_effects_applied', `verified ${verdict.snapshot.snapshot_id}`);
      tx.doc.refusal = null;
      tx.send({ type: 'WAKE.DONE' }, { reason: 'snapshot verified', trigger: 'system', evidence_refs: [`snapshot:${verdict.snapshot.snapshot_id}`] });
    } else if (verdict.kind === 'incompatible') {
      tx.doc.refusal = { reason: verdict.reason, hint: verdict.hint };
      tx.send({ type: 'WAKE.REFUSED', reason: verdict.reason, hint: verdict.hint }, { reason: verdict.reason, trigger: 'system' });
    } else {
      tx.send({ type: 'WAKE.FAILED', reason: verdict.reason }, { reason: verdict.reason, trigger: 'system' });
    }
  }

  private async recover(tx: Tx, effect: EffectRequest): Promise<void> {
    // A termination that failed half-way is isolated, not undone: it waits in Recovering, with
    // the failed phase recorded, for an operator to retry the termination (seed 002 scenario 5).
    const pending = tx.doc.pending_transition;
    if (pending?.from_phase === 'terminating') {
      tx.emit('transition_phase', { transition_id: pending.transition_id, phase: 'isolated_for_operator', detail: tx.doc.failure?.reason ?? 'termination failed' });
      return;
    }
    tx.logPhase('transition_prepared', effect.key);
    const fault = this.injectedFault(tx, 'recover');
    if (fault) {
      tx.send({ type: 'RECOVER.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'recovery' });
      return;
    }
    // Recovery ends on a fresh, verified recovery point built from committed records only.
    const snapshot = takeSnapshot(tx, 'recovery', this.deps.stamp);
    const verdict = verifySnapshot(snapshot, tx.cell.id, tx.doc.identity.identity_version);
    if (verdict.ok) {
      tx.logPhase('side_effects_applied', effect.key);
      tx.send({ type: 'RECOVER.DONE', snapshotId: snapshot.snapshot_id }, { reason: 'recovered to a verified snapshot', trigger: 'recovery', evidence_refs: [`snapshot:${snapshot.snapshot_id}`] });
    } else {
      tx.send({ type: 'RECOVER.FAILED', reason: verdict.reason }, { reason: verdict.reason, trigger: 'recovery' });
    }
  }

  private async evolve(tx: Tx, effect: EffectRequest): Promise<void> {
    tx.logPhase('transition_prepared', effect.key);
    const fault = this.injectedFault(tx, 'evolve');
    if (fault) {
      tx.send({ type: 'EVOLVE.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'system' });
      return;
    }
    tx.logPhase('side_effects_applied', effect.key);
    tx.send({ type: 'EVOLVE.DONE', accepted: true }, { reason: 'candidate change evaluated', trigger: 'system' });
  }

  private async terminate(tx: Tx, effect: EffectRequest): Promise<void> {
    tx.logPhase('transition_prepared', effect.key);
    try {
      await this.stopEffects(tx, 'agent_terminated', true);
      this.deps.timers.cancelAll(tx);
      takeSnapshot(tx, 'archive', this.deps.stamp);
      tx.logPhase('side_effects_applied', effect.key);
      tx.send({ type: 'TERMINATE.DONE' }, { reason: 'termination committed', trigger: 'system' });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      tx.emit('transition_phase', { transition_id: tx.doc.pending_transition?.transition_id ?? null, phase: 'side_effects_failed', detail: reason });
      tx.send({ type: 'TERMINATE.FAILED', phase: 'side_effects_applied', reason }, { reason, trigger: 'system' });
    }
  }

  /**
   * Stop / terminate: abort the run, interrupt tasks, revoke triggers; the queue is kept. The
   * records change only once the processes are gone, so a stop that times out changes nothing.
   */
  private async stopEffects(tx: Tx, reason: string, timeout = false): Promise<void> {
    // Processes are stopped on durable records only: an operation that builds on a head not yet
    // durable (`durableBefore: 'asked'`) waits for it here first (at once for every other one).
    await tx.cell.whenDurable();
    const live = tx.doc.tasks.filter((t) => !isTerminalTask(t.status));
    const stopping = this.deps.processes.stop(live);
    await (timeout ? this.withTimeout(stopping, 'stopping the task processes') : stopping);
    const runId = this.deps.turns.abortCurrentRun(tx, 'aborted');
    if (runId) tx.emit('current_run_aborted', { run_id: runId, reason });
    for (const task of tx.doc.tasks) {
      if (isTerminalTask(task.status)) continue;
      this.deps.processes.take(task.id);
      // No result re-enters a stopped agent (holon-reference §9): the waits on the task end with it.
      finishTaskRecord(tx, task, { status: 'interrupted', exit_code: null, reason }, { enqueueResult: false });
    }
    revokeAllTriggers(tx);
    tx.doc.pending_wake_hint = null;
    tx.doc.state.pending = pendingCount(tx.doc);
  }

  /** The fault RuntimeOptions.faults injects into this run of `effect`, logged as a failed side effect. */
  private injectedFault(tx: Tx, effect: Faulty): EffectFault | null {
    const fault = this.deps.options.faults?.[effect]?.(tx.cell.id) ?? null;
    if (fault) tx.emit('transition_phase', { transition_id: tx.doc.pending_transition?.transition_id ?? null, phase: 'side_effects_failed', detail: fault.reason });
    return fault;
  }

  private async withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    const ms = this.deps.options.effectTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} side effect timed out after ${ms} ms`)), ms);
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
