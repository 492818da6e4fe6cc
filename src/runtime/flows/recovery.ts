import { hostname } from 'node:os';
import { isTerminalTask } from '../../../machines/contracts/index.js';
import type { AgentCell, EffectRequest } from '../agent/agent-cell.js';
import { factsOf } from '../agent/facts.js';
import { AgentRoster, needsRecovery } from '../agent/roster.js';
import type { Tx } from '../agent/tx.js';
import type { TimerAlarms } from '../host/alarms.js';
import type { AgentCells } from '../host/cells.js';
import type { ResidentRoster } from '../host/resident-roster.js';
import { signalGroup } from '../process/index.js';
import { findEffect, resolveInDoubt, startCommandKey } from '../records/effects-ledger.js';
import { finishTaskRecord } from '../records/tasks.js';
import type { Store } from '../../store/store.js';
import type { InvocationResults } from './invocation-results.js';
import type { Lifecycle } from './lifecycle.js';
import type { Turns } from './turns.js';

/** The `dueAgents` alarm key of an agent (one per agent). */
export const DUE_AGENT = 'next-timer';
/** Actor failures of one agent in this process before its recovery is given up. */
const MAX_ACTOR_RECOVERIES = 3;

/** The transitional phases a crash can leave, and the effect that resumes each. */
const RESUMED: Partial<Record<string, EffectRequest['effect']>> = { initializing: 'initialize', waking: 'wake', recovering: 'recover', terminating: 'terminate', evolving: 'evolve' };

export interface RecoveryDeps {
  store: Pick<Store, 'listRoster' | 'evictAgent'>;
  cells: Pick<AgentCells, 'load' | 'get' | 'mutateCell'>;
  roster: Pick<ResidentRoster, 'set'>;
  /** Boot arms one alarm per never-loaded agent with a timer: at its due time it loads the agent, whose load arms its timers. */
  dueAgents: Pick<TimerAlarms, 'arm'>;
  lifecycle: Pick<Lifecycle, 'drain' | 'perform'>;
  turns: Pick<Turns, 'abortCurrentRun'>;
  invocations: Pick<InvocationResults, 'resend'>;
}

/** Recovery after a restart (holon-reference §2.1, §9.2, §12) and after an actor failure. */
export class Recovery {
  /** Actor failures per agent in this process: recovery is retried a few times, then given up. */
  private readonly actorFailures = new Map<string, number>();

  constructor(private readonly deps: RecoveryDeps) {}

  /**
   * Boot reads the roster, not the documents: it indexes every agent's trigger hashes, arms an
   * alarm at each agent's next timer, and loads and recovers only the agents whose entry says
   * they need it. Agents written before rosters existed (entry `null`) are recovered from their
   * document, and that recovery commits their first entry.
   */
  async recoverAll(): Promise<void> {
    const boot: string[] = [];
    const unlisted = new Set<string>();
    for (const { agent_id: agentId, roster } of await this.deps.store.listRoster()) {
      const entry = AgentRoster.safeParse(roster);
      if (!entry.success) {
        unlisted.add(agentId);
        boot.push(agentId);
        continue;
      }
      this.deps.roster.set(agentId, entry.data);
      if (entry.data.needs_recovery) boot.push(agentId);
      else {
        // Quiet: nothing of it stays open in the store (recovery may have appended to its segments).
        this.deps.store.evictAgent(agentId);
        if (entry.data.next_timer_at) this.deps.dueAgents.arm(agentId, DUE_AGENT, entry.data.next_timer_at);
      }
    }
    for (const agentId of boot) {
      const cell = await this.deps.cells.load(agentId);
      if (!cell) continue;
      await this.deps.cells.mutateCell(cell, async (tx) => {
        await this.recoverAgent(tx);
        if (unlisted.has(agentId)) tx.touch();
      }, { allowTerminated: true });
    }
  }

  /**
   * A cluster node loaded an agent under a lease it just took (a request, or `claimDueAgents`
   * after its holder died or stalled): what the last holder left open is recovered exactly as a
   * restart does (`recoverAgent`: a command in doubt becomes interrupted, never run again; a run
   * in flight is interrupted; a transitional phase resumes). Queued first in the agent's lane, so
   * it runs before the operation that loaded it. A quiet agent (released by its last holder) has
   * nothing to recover.
   */
  takeOver(cell: AgentCell): void {
    if (!needsRecovery(cell.doc)) return;
    void this.deps.cells.mutateCell(cell, (tx) => this.recoverAgent(tx), { allowTerminated: true }).catch(() => undefined);
  }

  /** A child actor threw: restore it from the last commit and send it to Recovering. */
  async onAgentFailed(agentId: string, error: string): Promise<void> {
    const cell = this.deps.cells.get(agentId);
    if (!cell) return;
    cell.actor = null;
    const failures = (this.actorFailures.get(agentId) ?? 0) + 1;
    this.actorFailures.set(agentId, failures);
    const abandoned = failures > MAX_ACTOR_RECOVERIES;
    await this.deps.cells
      .mutateCell(cell, async (tx) => {
        if (abandoned) {
          // The actor cannot even run its recovery (e.g. a corrupted machine snapshot): it stays
          // passivated with the failure on record, for an operator, instead of failing forever.
          tx.doc.runtime_error = true;
          tx.doc.failure = { phase: 'actor', reason: `actor failed ${failures} times; last: ${error}` };
          tx.emit('transition_phase', { transition_id: null, phase: 'recovery_abandoned', detail: error });
          return;
        }
        tx.send({ type: 'RECOVER', reason: `actor failed: ${error}` }, { reason: `actor failed: ${error}`, trigger: 'recovery' });
        await this.deps.lifecycle.drain(tx);
      }, { allowTerminated: true, kick: false })
      .catch(() => undefined);
  }

  /** Bootstrap recovery of one agent after a restart. */
  private async recoverAgent(tx: Tx): Promise<void> {
    const doc = tx.doc;
    // Effects left in doubt are never silently re-run: a started command becomes interrupted.
    resolveInDoubt(tx, (effect, result) => tx.onCommit(() => this.deps.invocations.resend(tx.cell.id, effect.idempotency_key, result)));
    for (const task of doc.tasks) {
      if (isTerminalTask(task.status)) continue;
      // A detached command outlives a killed runtime: end its process group before marking it.
      // In a cluster the process ran on the host that started it: a pid names nothing elsewhere.
      const detail = findEffect(doc, startCommandKey(task.id))?.detail;
      const pid = detail?.['pid'];
      const host = detail?.['host'];
      if (typeof pid === 'number' && (host === undefined || host === hostname())) signalGroup(pid, 'SIGKILL');
      finishTaskRecord(tx, task, { status: 'interrupted', exit_code: null, reason: 'runtime_restarted' });
    }
    const runId = this.deps.turns.abortCurrentRun(tx, 'interrupted');
    if (runId) {
      tx.send({ type: 'TURN.FINISHED', runId, facts: factsOf(doc) }, { reason: 'runtime restarted during the turn', trigger: 'recovery' });
      tx.emit('turn_finished', { run_id: runId, terminal: 'aborted', reason: 'runtime_restarted' });
    }
    // A transitional state left by a crash: its protocol is still open, so its (idempotent)
    // effect runs again and the transition commits from where the log says it stopped.
    const effect = RESUMED[doc.state.phase];
    if (effect) {
      tx.cell.ensureActor();
      tx.emit('transition_phase', { transition_id: doc.pending_transition?.transition_id ?? null, phase: 'resumed_on_recovery', detail: doc.state.phase });
      await this.deps.lifecycle.perform(tx, { type: 'effect.requested', effect, key: `${tx.cell.id}:${effect}:recovery` });
      await this.deps.lifecycle.drain(tx);
    }
    // A quiet agent (asleep, stopped, terminated) commits nothing at boot.
    if (!tx.dirty) tx.passivate();
  }
}
