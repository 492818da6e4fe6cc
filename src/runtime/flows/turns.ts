import { decideForMessage, deriveClosure, resolveContinuation } from '../../../machines/contracts/index.js';
import {
  CompleteTurnRequest,
  DomainError,
  type MessageEnvelope,
  type TaskRecord,
  type TurnAction,
  type TurnOffer,
  type TurnResult,
} from '../../domain/index.js';
import { factsOf } from '../agent/facts.js';
import { admitMessage, pendingCount, triggerOf } from '../agent/messages.js';
import type { Tx } from '../agent/tx.js';
import type { MutationOptions } from '../api.js';
import { newId } from '../clock.js';
import type { AgentCells } from '../host/cells.js';
import type { TurnOffers } from '../host/turn-offers.js';
import { recordDecision } from '../records/decisions.js';
import { createCommandTask } from '../records/tasks.js';
import type { TimerRecords } from '../records/timers.js';
import { createWaitRecord, resolveWaitsFor } from '../records/waits.js';
import { completeWorkItemRecord, createWorkItemRecord } from '../records/work-items.js';
import type { TurnRunner } from '../runners/turn-runner.js';
import type { InvocationResults } from './invocation-results.js';

export interface TurnsDeps {
  cells: Pick<AgentCells, 'mutate'>;
  runner: TurnRunner;
  offers: TurnOffers;
  turnLeaseMs: number;
  timers: TimerRecords;
  invocations: InvocationResults;
  /** A command task created by a turn starts once the turn's commit is durable. */
  launch(agentId: string, taskId: string): void;
}

/**
 * Turns (holon-reference §6.5): the claim of the head message with its continuation and decision,
 * the run (the scripted runner in process, or an HTTP worker through an offer), and the commit
 * that applies its result.
 */
export class Turns {
  /** Runs of the in-process runner, by run id: aborted with the run. */
  private readonly runs = new Map<string, AbortController>();

  constructor(private readonly deps: TurnsDeps) {}

  /** Claims the head message and starts its turn (decision recorded before the claim). */
  async claim(tx: Tx, message: MessageEnvelope): Promise<void> {
    const doc = tx.doc;
    const trigger = triggerOf(doc, message);
    const resolution = trigger ? resolveContinuation(trigger, doc.last_closure) : null;
    const decision = decideForMessage(factsOf(doc), resolution, message.id);
    recordDecision(tx, decision);
    await tx.flush();
    const runId = newId('run');
    const facts = factsOf(doc);
    if (!tx.send({ type: 'TURN.START', runId, facts }, { reason: `turn for ${message.kind} ${message.id}`, trigger: message.authority_class === 'operator_instruction' ? 'user' : 'system' })) {
      throw new DomainError('illegal_transition', `agent ${tx.cell.id} cannot start a turn in ${doc.state.phase}/${doc.state.status}`);
    }
    message.status = 'dequeued';
    message.run_id = runId;
    doc.state.current_run_id = runId;
    doc.state.turn_index += 1;
    doc.state.pending = pendingCount(doc);
    doc.last_turn_terminal = null;
    if (resolution && trigger) {
      // The continuation actor classifies the same trigger; the runtime applies it at once.
      tx.tellChild('continuation', { type: 'TRIGGER', trigger, prior: doc.last_closure, message });
      tx.tellChild('continuation', { type: 'RESOLUTION.APPLIED' });
      doc.state.last_continuation = resolution;
      tx.emit('continuation_resolved', { message_id: message.id, ...resolution });
      resolveWaitsFor(tx, message);
    }
    tx.emit('turn_started', { run_id: runId, message_id: message.id, turn_index: doc.state.turn_index });
    if (message.kind === 'system_tick' && message.origin.kind === 'system' && message.origin.subsystem === 'wake_hint') {
      tx.tellChild('continuation', { type: 'TICK.CONSUMED' });
    }
    if (decision.kind !== 'start_model_turn') {
      this.finish(tx, runId, { actions: [], text: 'reduced without a model turn' });
      return;
    }
    const offer: TurnOffer = {
      run_id: runId,
      agent_id: tx.cell.id,
      lease_ms: this.deps.turnLeaseMs,
      messages: [structuredClone(message)],
      closure: doc.last_closure,
      continuation: resolution,
    };
    // The turn runs only once its start is durable.
    if (doc.config.turn_runner === 'http_worker') {
      tx.onCommit(() => this.deps.offers.offer(offer));
    } else {
      const controller = new AbortController();
      this.runs.set(runId, controller);
      tx.onCommit(() => void this.run(tx.cell.id, offer, controller));
    }
  }

  /**
   * Ends the current run without its result (stop, abort, a restart): its runner is aborted, its
   * offer withdrawn, and its message marked `messageStatus`. Returns the run's id, if there was one.
   */
  abortCurrentRun(tx: Tx, messageStatus: 'aborted' | 'interrupted'): string | null {
    const runId = tx.doc.state.current_run_id;
    if (!runId) return null;
    this.runs.get(runId)?.abort();
    this.deps.offers.cancel(runId);
    for (const message of tx.doc.queue) if (message.run_id === runId && message.status === 'dequeued') message.status = messageStatus;
    tx.doc.state.current_run_id = null;
    tx.doc.last_turn_terminal = 'aborted';
    return runId;
  }

  /** Aborts one in-process run, if it is this process's (its agent went to another node). */
  abortRun(runId: string): void {
    this.runs.get(runId)?.abort();
  }

  /** Aborts every in-process run (close, a lost lease). */
  abortAll(): void {
    for (const controller of this.runs.values()) controller.abort();
  }

  /** CompleteTurn of an HTTP worker: applies its result if the run is still current. */
  async complete(runId: string, request: CompleteTurnRequest, options: MutationOptions = {}): Promise<{ run_id: string; applied: boolean }> {
    const { claim_id: claimId, ...result } = CompleteTurnRequest.parse(request);
    // A retried completion (same Idempotency-Key) of a claim that completed is answered from the agent's records.
    const completed = options.idempotency ? this.deps.offers.completedBy(runId, claimId) : null;
    const agentId = completed ?? this.deps.offers.complete(runId, claimId).agent_id;
    return this.deps.cells.mutate(agentId, async (tx) => {
      if (completed !== null) throw new DomainError('lease_lost', `turn ${runId} was completed already under claim ${claimId}`);
      if (tx.doc.state.current_run_id !== runId) throw new DomainError('stale_run_id', `run ${runId} is no longer current`);
      this.finish(tx, runId, result);
      return { run_id: runId, applied: true };
    }, options);
  }

  private async run(agentId: string, offer: TurnOffer, controller: AbortController): Promise<void> {
    let result: TurnResult;
    try {
      result = await this.deps.runner.run(offer, controller.signal);
    } catch (error) {
      result = { actions: [{ type: 'fail', reason: error instanceof Error ? error.message : String(error) }] };
    }
    this.runs.delete(offer.run_id);
    await this.deps.cells.mutate(agentId, async (tx) => {
      if (tx.doc.state.current_run_id !== offer.run_id) {
        // A run that already ended (aborted, stopped) and finishes late applies nothing; a live
        // actor still hears of it, and its isStaleRun guard keeps a newer run going.
        if (tx.cell.actor) tx.send({ type: 'TURN.FINISHED', runId: offer.run_id, facts: factsOf(tx.doc) }, { reason: 'stale turn finish', trigger: 'agent' });
        return;
      }
      this.finish(tx, offer.run_id, result);
    }, { pipelined: true }).catch(() => undefined);
  }

  /** Applies a turn's result in one commit; the machine decides where the agent goes next. */
  private finish(tx: Tx, runId: string, result: TurnResult): void {
    const doc = tx.doc;
    const message = doc.queue.find((m) => m.run_id === runId);
    let failed = false;
    const starts: TaskRecord[] = [];
    for (const action of result.actions) {
      const outcome = this.apply(tx, action, message ?? null);
      if (outcome === 'failed') failed = true;
      if (outcome && typeof outcome === 'object') starts.push(outcome);
    }
    if (message) message.status = 'processed';
    doc.state.current_run_id = null;
    doc.state.pending = pendingCount(doc);
    doc.last_turn_terminal = failed ? 'failed' : 'completed';
    doc.runtime_error = failed;
    doc.last_closure = deriveClosure(factsOf(doc));
    tx.send({ type: 'TURN.FINISHED', runId, facts: factsOf(doc) }, { reason: failed ? 'turn failed' : 'turn completed', trigger: 'agent' });
    tx.emit('turn_finished', { run_id: runId, closure: doc.last_closure, text: (result.text ?? '').slice(0, 2000) });
    if (message) this.deps.invocations.notifyInvoker(tx, message, failed, result.text ?? '');
    for (const task of starts) this.deps.launch(tx.cell.id, task.id);
  }

  private apply(tx: Tx, action: TurnAction, message: MessageEnvelope | null): TaskRecord | 'failed' | null {
    switch (action.type) {
      case 'exec_command': {
        const task = createCommandTask(tx, {
          summary: action.summary ?? action.cmd.slice(0, 200),
          cmd: action.cmd,
          accepts_input: action.accepts_input ?? false,
          ...(action.timeout_ms ? { timeout_ms: action.timeout_ms } : {}),
          ...(message?.work_item_id ? { work_item_id: message.work_item_id } : {}),
        }, message?.run_id ?? null);
        if (action.wait) createWaitRecord(tx, { wake: 'task_result', reason: `waiting for task ${task.id}`, resource: task.id });
        return task;
      }
      case 'wait_for':
        createWaitRecord(tx, { wake: action.wake, reason: action.reason ?? 'waiting', ...(action.resource ? { resource: action.resource } : {}), ...(action.work_item_id ? { work_item_id: action.work_item_id } : {}) });
        return null;
      case 'enqueue':
        admitMessage(tx.doc, { kind: 'internal_followup', origin: { kind: 'system', subsystem: 'tool_enqueue' }, authority_class: 'runtime_instruction', priority: action.priority ?? 'next', body: { type: 'text', text: action.text }, work_item_id: message?.work_item_id ?? null }, tx.now);
        tx.emit('message_queued', { kind: 'internal_followup' });
        return null;
      case 'create_work_item':
        createWorkItemRecord(tx, action.objective);
        return null;
      case 'complete_work_item': {
        const item = tx.doc.work_items.find((w) => w.id === action.work_item_id);
        if (item && item.state === 'open') completeWorkItemRecord(tx, item, action.report ?? 'completed by the agent');
        return null;
      }
      case 'set_timer': {
        const timer = this.deps.timers.create(tx, { duration_ms: action.duration_ms });
        if (action.wait) createWaitRecord(tx, { wake: 'timer', reason: `waiting for timer ${timer.id}`, resource: timer.id });
        return null;
      }
      case 'sleep':
        return null;
      case 'fail':
        tx.emit('turn_finished', { note: 'fail directive', reason: action.reason });
        return 'failed';
    }
  }
}
