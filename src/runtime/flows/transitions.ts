import {
  AbortRunRequest,
  ControlRequest,
  DomainError,
  TransitionRequest,
  type AgentSummary,
  type TransitionRecord,
} from '../../domain/index.js';
import { refusedByState, transitionEvent } from '../agent/accepts.js';
import { closingRef, findTransition, type AgentDoc } from '../agent/agent-doc.js';
import { statePath, type Tx } from '../agent/tx.js';
import type { MutationOptions } from '../api.js';
import type { AgentCells } from '../host/cells.js';
import { reasonChain } from '../reason-chain.js';
import { draftSummary } from '../records/views.js';
import type { Store } from '../../store/store.js';
import type { Lifecycle } from './lifecycle.js';
import type { Turns } from './turns.js';

/** Operator controls and client-requested transitions (seed 002), and the reason chain they leave. */
export class Transitions {
  constructor(
    private readonly cells: Pick<AgentCells, 'mutate' | 'cell'>,
    private readonly lifecycle: Pick<Lifecycle, 'drain'>,
    private readonly turns: Pick<Turns, 'abortCurrentRun'>,
    private readonly store: Pick<Store, 'readEvents'>,
  ) {}

  async control(agentId: string, request: ControlRequest, options: MutationOptions = {}): Promise<AgentSummary> {
    const req = ControlRequest.parse(request);
    const expected = req.expected_version ?? options.expected_version;
    return this.cells.mutate(agentId, async (tx) => {
      const changes = req.action === 'stop' ? tx.doc.state.status !== 'stopped' : tx.doc.state.status === 'stopped';
      if (req.action === 'stop' && changes) {
        if (!tx.send({ type: 'STOP', reason: 'operator stop' }, { reason: 'operator stop', trigger: 'user', initiator: 'operator', principal: 'control_token' })) {
          throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'illegal_transition', `agent ${agentId} cannot stop in phase ${tx.doc.state.phase}`);
        }
      } else if (changes) {
        tx.send({ type: 'START' }, { reason: 'operator start', trigger: 'user', initiator: 'operator', principal: 'control_token' });
      }
      if (changes) {
        tx.emit('control_applied', { action: req.action });
        await this.lifecycle.drain(tx);
      }
      // Started back asleep (it was stopped asleep): asleep holds no actor.
      if (tx.doc.state.phase === 'sleeping') tx.passivate();
      return draftSummary(tx);
    }, { ...options, ...(expected !== undefined ? { expected_version: expected } : {}) });
  }

  async transition(agentId: string, request: TransitionRequest, options: MutationOptions = {}): Promise<{ record: TransitionRecord; replayed: boolean }> {
    const req = TransitionRequest.parse(request);
    const cell = await this.cells.cell(agentId);
    if (findTransition(cell.doc, req.transition_id)) return { record: transitionResult(cell.doc, req.transition_id), replayed: true };
    const record = await this.cells.mutate(agentId, async (tx) => {
      if (findTransition(tx.doc, req.transition_id)) return transitionResult(tx.doc, req.transition_id);
      return this.explicitTransition(tx, req);
    }, { ...options, expected_version: req.expected_version, allowTerminated: false });
    return { record, replayed: false };
  }

  async abortRun(agentId: string, request: AbortRunRequest, options: MutationOptions = {}) {
    const req = AbortRunRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => {
      const current = tx.doc.state.current_run_id;
      if (!current) throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'no_current_run', `agent ${agentId} has no current run`);
      if (req.run_id && req.run_id !== current) throw new DomainError('stale_run_id', `run ${req.run_id} is not the current run ${current}`, { current_run_id: current });
      const runId = this.turns.abortCurrentRun(tx, 'aborted') as string;
      tx.send({ type: 'TURN.ABORT' }, { reason: 'operator aborted the run', trigger: 'user', initiator: 'operator' });
      tx.emit('current_run_aborted', { run_id: runId });
      // The abort ends the run only: tasks and triggers stay (holon-reference §11).
      tx.cell.takeEffects();
      return { agent_id: agentId, run_id: runId, aborted: true as const };
    }, options);
  }

  async terminate(agentId: string, options: MutationOptions = {}): Promise<AgentSummary> {
    return this.cells.mutate(agentId, async (tx) => {
      if (tx.doc.state.phase !== 'terminated') {
        if (!tx.send({ type: 'TERMINATE', reason: 'operator delete' }, { reason: 'operator delete', trigger: 'user', initiator: 'operator' })) {
          throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'illegal_transition', `agent ${agentId} cannot terminate from ${tx.doc.state.phase}`);
        }
        await tx.flush();
        await this.lifecycle.drain(tx);
      }
      if (tx.doc.state.phase === 'terminated') tx.passivate();
      return draftSummary(tx);
    }, { ...options, allowTerminated: true });
  }

  /** The reason chain, read from the event log (the document keeps only recent records). */
  async list(agentId: string, query: { after_seq?: number; limit: number }): Promise<TransitionRecord[]> {
    await this.cells.cell(agentId);
    const out: TransitionRecord[] = [];
    let after = 0;
    for (;;) {
      const page = await this.store.readEvents(agentId, { after_seq: after, limit: 512, order: 'asc' });
      for (const record of reasonChain(page.events).transitions) {
        if (record.seq > (query.after_seq ?? 0) && out.length < query.limit) out.push(record);
      }
      const last = page.events.at(-1);
      if (!last || out.length >= query.limit || last.event_seq >= page.newest_seq) return out;
      after = last.event_seq;
    }
  }

  /** The seed-002 protocol for a client-requested transition. */
  private async explicitTransition(tx: Tx, req: TransitionRequest): Promise<TransitionRecord> {
    const requestedAt = tx.now.toISOString();
    const from = tx.doc.state.phase;
    const event = transitionEvent(req.to, req.reason, tx.doc);
    const snapshot = tx.cell.ensureActor().getSnapshot();
    if (!snapshot.can(event)) {
      const guarded = refusingGuard(req.to, tx);
      if (guarded) throw refusedByState(snapshot, tx.cell.id, tx.doc, 'guard_rejected', `guard ${guarded} refused ${from} → ${req.to}`, { guard: guarded, from, to: req.to });
      throw refusedByState(snapshot, tx.cell.id, tx.doc, 'illegal_transition', `no transition from ${from} (${statePath(snapshot.value)}) to ${req.to}`, { from, to: req.to });
    }
    // A target without a transitional state commits at once; the phases it went through are its own.
    const at = tx.now.toISOString();
    tx.send(event, {
      reason: req.reason,
      trigger: 'user',
      transition_id: req.transition_id,
      initiator: req.actor?.initiator ?? 'operator',
      principal: req.actor?.principal ?? 'control_token',
      evidence_refs: req.evidence_refs ?? [],
      requested_at: requestedAt,
      phases: [
        { phase: 'transition_requested', at: requestedAt },
        { phase: 'guard_checked', at },
        { phase: 'transition_committed', at },
      ],
    });
    await tx.flush();
    // `to: active` from sleeping runs through waking, `to: terminated` through terminating: their
    // effects run now, and the transition out of the transitional state carries all five phases.
    await this.lifecycle.drain(tx);
    if (tx.doc.state.phase === 'sleeping') {
      await tx.flush();
      tx.passivate();
    }
    const refusal = tx.doc.refusal;
    if (refusal && (req.to === 'active' || req.to === 'waking') && tx.doc.state.phase === 'sleeping') {
      throw new DomainError('snapshot_incompatible', `${refusal.reason}; ${refusal.hint}`, { hint: refusal.hint, transition_id: req.transition_id });
    }
    return transitionResult(tx.doc, req.transition_id);
  }
}

/**
 * What a client's transition answers with: its record, with every protocol phase it went
 * through — those of the transition out of the transitional state included, when there was one
 * (that record names the request as `transition:<id>`). The stored record keeps its own phases;
 * the full protocol is in the `transition_phase` events too.
 */
function transitionResult(doc: AgentDoc, transitionId: string): TransitionRecord {
  const opened = findTransition(doc, transitionId);
  if (!opened) throw new DomainError('internal_error', `transition ${transitionId} did not commit`);
  const closed = doc.transitions.find((t) => t.evidence_refs.includes(closingRef(transitionId)));
  return closed ? { ...opened, phases: closed.phases } : opened;
}

/** The guard that refuses a transition the machine does not take, when one does. */
function refusingGuard(to: TransitionRequest['to'], tx: Tx): string | null {
  const value = statePath(tx.cell.ensureActor().getSnapshot().value);
  if (to === 'sleeping' && value === 'active.awakeIdle') return 'canSleep';
  return null;
}
