import { decideIdleSignal, idleBoundaryDecision, workSignal } from '../../../machines/contracts/index.js';
import { factsOf } from '../agent/facts.js';
import { admitMessage, headOfQueue } from '../agent/messages.js';
import { needsRecovery } from '../agent/roster.js';
import type { Tx } from '../agent/tx.js';
import type { AgentCells } from '../host/cells.js';
import { recordDecision } from '../records/decisions.js';
import { Soon } from '../soon.js';
import { emitWakeTick } from './ingress.js';
import type { Lifecycle } from './lifecycle.js';
import type { Turns } from './turns.js';

/**
 * The scheduler lane of every agent (holon-reference §6.5): after each operation the agent is
 * looked at again, once per turn of the event loop, and takes one step — sleep or wake, claim the
 * head message, replay a pending wake hint, tick its runnable work, or go idle.
 */
export class Scheduler {
  /** Scheduler steps asked for, one per agent per turn of the event loop. */
  private readonly steps = new Soon((agentId) => this.step(agentId));

  constructor(
    private readonly cells: Pick<AgentCells, 'get' | 'mutateCell' | 'isClosing'>,
    private readonly lifecycle: Pick<Lifecycle, 'drain'>,
    private readonly turns: Pick<Turns, 'claim'>,
    /** Whether this instance may still act (it holds the lease). */
    private readonly acting: () => boolean,
  ) {}

  /** Asks the agent's scheduler to look at it again, after the operations already queued. */
  kick(agentId: string): void {
    if (this.cells.isClosing || !this.acting()) return;
    this.steps.ask(agentId);
  }

  /**
   * On the draft that finished a turn: when the step would claim the queue's head next, claims
   * it there, so the next turn starts in the finish's commit instead of a commit of its own
   * (any other decision — a hint's replay, IDLE and the sleep — is left to the step the
   * finish's kick asks for, which also gives inputs a commit's time to join the agent awake).
   */
  async claimOn(tx: Tx): Promise<void> {
    if (this.cells.isClosing || !this.acting()) return;
    await this.decide(tx, 'claim_only');
  }

  private async step(agentId: string): Promise<void> {
    const cell = this.cells.get(agentId);
    if (!cell || this.cells.isClosing) return;
    // A step acts only through the records it commits and its `onCommit` effects (a turn's run or
    // offer), so it waits only for what was committed before it was asked, outside the lane:
    // inputs that arrive meanwhile pass it, and it does not wait for their commits again.
    const again = await this.cells.mutateCell(cell, async (tx) => this.schedule(tx), { allowTerminated: true, kick: false, durableBefore: 'asked' });
    if (again) this.kick(agentId);
  }

  /**
   * One scheduler decision (holon-reference §6.5); returns whether to look again. Most steps
   * (one is asked after every input, also while a turn runs) decide nothing: those are found on
   * the lane's head, read only, before a draft deep-copies the document and its queue.
   */
  private async schedule(tx: Tx): Promise<boolean> {
    const state = tx.cell.head.state;
    if (!['active', 'sleeping'].includes(state.phase)) return false;
    if (state.status !== 'stopped' && state.current_run_id) return false;
    return this.decide(tx);
  }

  /** `schedule` on the draft; `claim_only`: unless it claims the head, it decides nothing. */
  private async decide(tx: Tx, only?: 'claim_only'): Promise<boolean> {
    const doc = tx.doc;
    if (only ? doc.state.phase !== 'active' : !['active', 'sleeping'].includes(doc.state.phase)) return false;
    if (only && doc.state.status === 'stopped') return false;
    if (doc.state.status === 'stopped') {
      // Stopped, like asleep, holds no compute once nothing is in flight: the actor goes, its
      // snapshot stays (Start, or a task's end, rehydrates it).
      if (!needsRecovery(doc)) tx.passivate();
      return false;
    }
    if (doc.state.current_run_id) return false;
    const head = headOfQueue(doc);
    if (doc.state.phase === 'sleeping') {
      // Nothing to wake for, or a wake refused until the agent is migrated: asleep holds no actor.
      if ((!head && !doc.pending_wake_hint) || doc.refusal) {
        tx.passivate();
        return false;
      }
      tx.send({ type: 'WAKE', reason: head ? `message ${head.id} queued` : 'wake hint pending' }, { reason: 'work arrived while asleep', trigger: 'system' });
      await this.lifecycle.drain(tx);
      // A refused wake is back asleep at once: no actor is left live for it.
      if (tx.doc.state.phase === 'sleeping') {
        tx.passivate();
        return true;
      }
      // Woken: Waking's two transitions (sleeping → waking, waking → active with its protocol
      // phases) are in the draft; the step goes on from Active on the same draft, so the wake and
      // the claim of the message it woke for commit together (seed 002 keeps Waking explicit as a
      // state with its phases, not as a commit of its own).
      return this.decide(tx);
    }
    if (head) {
      await this.turns.claim(tx, head);
      return false;
    }
    if (only) return false;
    // Ref §6.6: a pending wake hint first, then runnable work; each decision is the contract's.
    const hint = doc.pending_wake_hint;
    if (hint) {
      tx.tellChild('continuation', { type: 'HINT.FLUSH' });
      doc.pending_wake_hint = null;
      emitWakeTick(tx, hint.reason, hint.source, hint.created_at);
      return true;
    }
    const signal = workSignal(factsOf(doc));
    if (signal) {
      const item = doc.work_items.find((w) => w.id === signal.work_item_id);
      const key = `work_queue:${signal.reactivation_mode}:${signal.work_item_id}:${item?.revision ?? 0}`;
      const kind = signal.reactivation_mode === 'continue_active' ? 'continue_active' : 'queued_available';
      const decision = decideIdleSignal(factsOf(doc), { kind, duplicate: doc.recent_keys.includes(key) });
      // A suppressed tick (its key queued already) is not recorded: the scheduler looks again on
      // every kick, and would record the same suppression each time.
      if (decision.kind === 'emit_system_tick') {
        recordDecision(tx, decision);
        admitMessage(
          doc,
          {
            kind: 'system_tick',
            origin: { kind: 'system', subsystem: 'work_queue' },
            authority_class: 'runtime_instruction',
            priority: 'normal',
            body: { type: 'text', text: `${signal.reactivation_mode === 'continue_active' ? 'Continue current work item' : 'Queued work item is available'}: ${item?.objective ?? ''}` },
            work_item_id: signal.work_item_id,
            idempotency_key: key,
            metadata: { work_queue: { reason: signal.reactivation_mode, idempotency_key: key, work_item_id: signal.work_item_id } },
          },
          tx.now,
        );
        tx.emit('message_queued', { kind: 'system_tick', reason: signal.reactivation_mode, work_item_id: signal.work_item_id });
        return true;
      }
    }
    const facts = factsOf(doc);
    // Awaiting a task, the machine takes no IDLE: the task's TASK.SETTLED moves it on. Taken, the
    // agent goes to sleep on the contract's idle-boundary decision: sleep, or the wait it keeps.
    if (tx.send({ type: 'IDLE', facts }, { reason: 'no queued input, no runnable work', trigger: 'system' })) {
      recordDecision(tx, idleBoundaryDecision(facts));
      await this.lifecycle.drain(tx);
      // A failed sleep went through Recovering back to Active: that agent stays live. Asleep, the
      // actor goes now, its snapshot in the draft: the step does not wait in the lane for the sleep
      // to be durable (inputs would wait behind it); were the commit refused, the lane rehydrates
      // the actor from the durable state, as after any refused commit.
      if (tx.doc.state.phase === 'sleeping') tx.passivate();
    }
    return false;
  }
}
