import { decideForMessage, deriveClosure, isOperatorInterjection, mayJoinTurn, resolveContinuation, type TurnMember } from '../../../machines/contracts/index.js';
import {
  cloneJson,
  CompleteTurnRequest,
  DomainError,
  HeartbeatTurnRequest,
  runIdFor,
  type AgentEvent,
  type ContinuationResolution,
  type MessageEnvelope,
  type SchedulerDecision,
  type SchedulerFacts,
  type TaskRecord,
  type TurnAction,
  type TurnOffer,
  type TurnResult,
} from '../../domain/index.js';
import { factsOf } from '../agent/facts.js';
import type { AgentDoc } from '../agent/agent-doc.js';
import { admitMessage, pendingCount, pendingInOrder, triggerOf, updateMessages } from '../agent/messages.js';
import { isPending } from '../agent/queue-tally.js';
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
import type { SafePoint, TurnRunner } from '../runners/turn-runner.js';
import type { InvocationResults } from './invocation-results.js';

export interface TurnsDeps {
  cells: Pick<AgentCells, 'mutate' | 'get'>;
  runner: TurnRunner;
  offers: TurnOffers;
  turnLeaseMs: number;
  /** The most messages one turn holds, at its start and after its safe points (`RuntimeOptions.turnMaxMessages`). */
  turnMaxMessages: number;
  /** Committed events of one agent as they become durable (a held safe point waits for a `message_queued`). */
  subscribe(agentId: string, listener: (event: AgentEvent) => void): () => void;
  timers: TimerRecords;
  invocations: InvocationResults;
  /** A command task created by a turn starts once the turn's commit is durable. */
  launch(agentId: string, taskId: string): void;
  /** On the draft that finished a turn: the next turn's claim, if the scheduler would claim next (`Scheduler.claimOn`). */
  claimNext(tx: Tx): Promise<void>;
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

  /**
   * Claims the head message and the messages that may share its turn (`mayJoinTurn`: the prefix of
   * the queue's priority/FIFO order that may join, up to the bound), and starts the turn. Each
   * message gets its decision (recorded before the claim, in the same commit: ordered before
   * TURN.START and `turn_started` in the log), its continuation resolution and its waits resolved;
   * the batch has one run id. The run starts once this commit is durable (`onCommit`).
   */
  async claim(tx: Tx, head: MessageEnvelope): Promise<void> {
    const doc = tx.doc;
    const facts = factsOf(doc);
    const first = planFor(doc, facts, head);
    const batch = [first];
    if (first.decision.kind === 'start_model_turn') {
      for (const candidate of pendingInOrder(doc)) {
        if (candidate.id === head.id) continue;
        const next = planFor(doc, facts, candidate);
        if (!mayJoinTurn({ head: memberOf(first), size: batch.length, bound: this.deps.turnMaxMessages, at: 'turn_start' }, memberOf(next)).join) break;
        batch.push(next);
      }
    }
    for (const planned of batch) recordDecision(tx, planned.decision);
    const runId = runIdFor(newId('run'), tx.cell.id);
    const more = batch.length > 1 ? ` and ${batch.length - 1} more` : '';
    if (!tx.send({ type: 'TURN.START', runId, facts: factsOf(doc) }, { reason: `turn for ${head.kind} ${head.id}${more}`, trigger: head.authority_class === 'operator_instruction' ? 'user' : 'system' })) {
      throw new DomainError('illegal_transition', `agent ${tx.cell.id} cannot start a turn in ${doc.state.phase}/${doc.state.status}`);
    }
    doc.state.current_run_id = runId;
    doc.state.turn_index += 1;
    doc.last_turn_terminal = null;
    // The turn's continuation is its head's: how the agent got into this turn.
    if (first.resolution) doc.state.last_continuation = first.resolution;
    this.admit(tx, runId, batch);
    tx.emit('turn_started', { run_id: runId, message_id: head.id, message_ids: batch.map((p) => p.message.id), turn_index: doc.state.turn_index });
    if (first.decision.kind !== 'start_model_turn') {
      this.finish(tx, runId, { actions: [], text: 'reduced without a model turn' });
      return;
    }
    const offer: TurnOffer = {
      run_id: runId,
      agent_id: tx.cell.id,
      lease_ms: this.deps.turnLeaseMs,
      messages: batch.map((p) => cloneJson(p.message)),
      closure: doc.last_closure,
      continuation: first.resolution,
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
   * A safe point of the running turn `runId` (ref §3): in one lane operation, the queued messages
   * that may join it (operator interjections, `mayJoinTurn` at `safe_point`, up to the bound) are
   * moved into it — dequeued under the same run id, each with its decision, continuation and
   * waits resolved, and a `turn_interjected` event. Returns them (none if the run is no longer
   * current). An agent with no such message queued costs no lane operation.
   */
  async take(agentId: string, runId: string): Promise<MessageEnvelope[]> {
    const head = this.deps.cells.get(agentId)?.head;
    if (head && !mayTakeMore(head, runId, this.deps.turnMaxMessages)) return [];
    return this.deps.cells.mutate(agentId, async (tx) => {
      const doc = tx.doc;
      if (doc.state.current_run_id !== runId) return [];
      const members = doc.queue.filter((m) => m.run_id === runId && m.status === 'dequeued');
      const [firstMember] = members;
      if (!firstMember) return [];
      // Every member is bound to the turn's work item or to none, so the first bound one names it.
      const turnHead: TurnMember = { ...memberOf({ message: firstMember, decision: { kind: 'start_model_turn' } }), work_item_id: turnWorkItem(members) };
      const facts = factsOf(doc);
      const taken: Planned[] = [];
      for (const candidate of pendingInOrder(doc)) {
        const next = planFor(doc, facts, candidate);
        if (!mayJoinTurn({ head: turnHead, size: members.length + taken.length, bound: this.deps.turnMaxMessages, at: 'safe_point' }, memberOf(next)).join) break;
        taken.push(next);
      }
      if (taken.length === 0) return [];
      for (const planned of taken) recordDecision(tx, planned.decision);
      this.admit(tx, runId, taken);
      tx.emit('turn_interjected', { run_id: runId, message_ids: taken.map((p) => p.message.id), turn_index: doc.state.turn_index });
      const copies = taken.map((p) => cloneJson(p.message));
      // A re-offer of the turn (an expired lease) carries them too.
      if (doc.config.turn_runner === 'http_worker') tx.onCommit(() => this.deps.offers.append(runId, copies));
      return copies;
    }, { pipelined: true, kick: false });
  }

  /**
   * Heartbeat of an HTTP worker: extends its lease; with `take_messages`, first takes the messages
   * that may join the turn now (a safe point, as `take`) and answers with every message of the
   * run so far, in the order the turn took them (a lost answer loses nothing: the next has them).
   */
  async heartbeat(runId: string, request: HeartbeatTurnRequest): Promise<{ run_id: string; claim_id: string; lease_expires_at: string; messages?: MessageEnvelope[] }> {
    const { claim_id: claimId, take_messages: takeMessages } = HeartbeatTurnRequest.parse(request);
    const agentId = this.deps.offers.heartbeatAgent(runId, claimId);
    if (takeMessages) await this.take(agentId, runId);
    // Extended after the take, so a take that waited in the lane does not eat into the lease.
    const leaseExpiresAt = this.deps.offers.heartbeat(runId, claimId);
    return { run_id: runId, claim_id: claimId, lease_expires_at: leaseExpiresAt, ...(takeMessages ? { messages: this.deps.offers.messagesOf(runId, claimId) } : {}) };
  }

  /**
   * Dequeues `batch` into the run `runId` (each planned message becomes its dequeued record): each
   * message's continuation applied, its waits resolved.
   */
  private admit(tx: Tx, runId: string, batch: Planned[]): void {
    const doc = tx.doc;
    const ids = new Set(batch.map((p) => p.message.id));
    const dequeued = new Map(updateMessages(doc, (m) => ids.has(m.id), { status: 'dequeued', run_id: runId }).map((m) => [m.id, m]));
    for (const planned of batch) planned.message = dequeued.get(planned.message.id) ?? planned.message;
    doc.state.pending = pendingCount(doc);
    for (const { message, trigger, resolution } of batch) {
      if (resolution && trigger) {
        // The continuation actor classifies the same trigger; the runtime applies it at once.
        tx.tellChild('continuation', { type: 'TRIGGER', trigger, prior: doc.last_closure, message });
        tx.tellChild('continuation', { type: 'RESOLUTION.APPLIED' });
        tx.emit('continuation_resolved', { message_id: message.id, ...resolution });
        resolveWaitsFor(tx, message);
      }
      if (message.kind === 'system_tick' && message.origin.kind === 'system' && message.origin.subsystem === 'wake_hint') {
        tx.tellChild('continuation', { type: 'TICK.CONSUMED' });
      }
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
    updateMessages(tx.doc, (m) => m.run_id === runId && m.status === 'dequeued', { status: messageStatus });
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
      await this.deps.claimNext(tx);
      return { run_id: runId, applied: true };
    }, options);
  }

  private async run(agentId: string, offer: TurnOffer, controller: AbortController): Promise<void> {
    let result: TurnResult;
    try {
      result = await this.deps.runner.run(offer, controller.signal, this.safePoint(agentId, offer.run_id));
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
      await this.deps.claimNext(tx);
    }, { pipelined: true }).catch(() => undefined);
  }

  /** Applies a turn's result in one commit; the machine decides where the agent goes next. */
  private finish(tx: Tx, runId: string, result: TurnResult): void {
    const doc = tx.doc;
    const messages = doc.queue.filter((m) => m.run_id === runId && m.status === 'dequeued');
    const turn: TurnContext = { run_id: runId, work_item_id: turnWorkItem(messages) };
    let failed = false;
    const starts: TaskRecord[] = [];
    for (const action of result.actions) {
      const outcome = this.apply(tx, action, turn);
      if (outcome === 'failed') failed = true;
      if (outcome && typeof outcome === 'object') starts.push(outcome);
    }
    const processed = updateMessages(doc, (m) => m.run_id === runId && m.status === 'dequeued', { status: 'processed' });
    doc.state.current_run_id = null;
    doc.state.pending = pendingCount(doc);
    doc.last_turn_terminal = failed ? 'failed' : 'completed';
    doc.runtime_error = failed;
    doc.last_closure = deriveClosure(factsOf(doc));
    tx.send({ type: 'TURN.FINISHED', runId, facts: factsOf(doc) }, { reason: failed ? 'turn failed' : 'turn completed', trigger: 'agent' });
    tx.emit('turn_finished', { run_id: runId, closure: doc.last_closure, text: (result.text ?? '').slice(0, 2000) });
    for (const message of processed) this.deps.invocations.notifyInvoker(tx, message, failed, result.text ?? '');
    for (const task of starts) this.deps.launch(tx.cell.id, task.id);
  }

  /** The seam the in-process runner takes newly arrived messages through. */
  private safePoint(agentId: string, runId: string): SafePoint {
    return {
      take: () => this.take(agentId, runId),
      next: (signal) => this.nextArrival(agentId, runId, signal),
    };
  }

  /** Resolves with the first non-empty take after now (tried at once, then on each `message_queued`), or [] once `signal` aborts. */
  private nextArrival(agentId: string, runId: string, signal: AbortSignal): Promise<MessageEnvelope[]> {
    return new Promise((resolve) => {
      let done = false;
      let busy = false;
      let again = false;
      const end = (messages: MessageEnvelope[]) => {
        if (done) return;
        done = true;
        unsubscribe();
        signal.removeEventListener('abort', onAbort);
        resolve(messages);
      };
      const onAbort = () => end([]);
      const attempt = (): void => {
        if (done) return;
        if (busy) {
          again = true;
          return;
        }
        busy = true;
        this.take(agentId, runId).then(
          (messages) => {
            busy = false;
            if (messages.length > 0) end(messages);
            else if (again) {
              again = false;
              attempt();
            }
          },
          () => end([]),
        );
      };
      // Subscribed before the first try: a message queued in between is not missed.
      const unsubscribe = this.deps.subscribe(agentId, (event) => {
        if (event.type === 'message_queued') attempt();
      });
      if (signal.aborted) return end([]);
      signal.addEventListener('abort', onAbort, { once: true });
      attempt();
    });
  }

  private apply(tx: Tx, action: TurnAction, turn: TurnContext): TaskRecord | 'failed' | null {
    switch (action.type) {
      case 'exec_command': {
        const task = createCommandTask(tx, {
          summary: action.summary ?? action.cmd.slice(0, 200),
          cmd: action.cmd,
          accepts_input: action.accepts_input ?? false,
          ...(action.timeout_ms ? { timeout_ms: action.timeout_ms } : {}),
          ...(turn.work_item_id ? { work_item_id: turn.work_item_id } : {}),
        }, turn.run_id);
        if (action.wait) createWaitRecord(tx, { wake: 'task_result', reason: `waiting for task ${task.id}`, resource: task.id });
        return task;
      }
      case 'wait_for':
        createWaitRecord(tx, { wake: action.wake, reason: action.reason ?? 'waiting', ...(action.resource ? { resource: action.resource } : {}), ...(action.work_item_id ? { work_item_id: action.work_item_id } : {}) });
        return null;
      case 'enqueue':
        admitMessage(tx.doc, { kind: 'internal_followup', origin: { kind: 'system', subsystem: 'tool_enqueue' }, authority_class: 'runtime_instruction', priority: action.priority ?? 'next', body: { type: 'text', text: action.text }, work_item_id: turn.work_item_id }, tx.now);
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

/** What a turn's actions bind to: its run and its work item. */
interface TurnContext {
  run_id: string;
  work_item_id: string | null;
}

/** A message with its trigger, continuation resolution and the contract's decision for it. */
interface Planned {
  message: MessageEnvelope;
  trigger: ReturnType<typeof triggerOf>;
  resolution: ContinuationResolution | null;
  decision: SchedulerDecision;
}

function planFor(doc: AgentDoc, facts: SchedulerFacts, message: MessageEnvelope): Planned {
  const trigger = triggerOf(doc, message);
  const resolution = trigger ? resolveContinuation(trigger, doc.last_closure) : null;
  return { message, trigger, resolution, decision: decideForMessage(facts, resolution, message.id) };
}

function memberOf({ message, decision }: Pick<Planned, 'message'> & { decision: Pick<SchedulerDecision, 'kind'> }): TurnMember {
  return {
    kind: message.kind,
    origin: message.origin,
    authority_class: message.authority_class,
    priority: message.priority,
    work_item_id: message.work_item_id,
    decision: decision.kind,
  };
}

/** The turn's work item: its members are bound to it or to none (`mayJoinTurn` rule 4). */
function turnWorkItem(messages: readonly MessageEnvelope[]): string | null {
  return messages.find((m) => m.work_item_id)?.work_item_id ?? null;
}

/**
 * Whether a safe point of the run `runId` could take anything from `doc` (the lane's head, read
 * without entering the lane): an operator interjection is pending and the turn is under its bound.
 * Only a shortcut: the lane operation decides with `mayJoinTurn`.
 */
function mayTakeMore(doc: AgentDoc, runId: string, bound: number): boolean {
  let held = 0;
  let interjection = false;
  for (const m of doc.queue) {
    if (m.run_id === runId && m.status === 'dequeued') held += 1;
    else if (!interjection && isPending(m) && isOperatorInterjection(m)) interjection = true;
  }
  return interjection && held < bound;
}
