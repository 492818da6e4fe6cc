import { hasId, type AgentEffect, type SupervisorContext } from '../../../machines/index.js';
import { Draft } from './draft.js';
import { AGENTS, liveTask, normalizeDoc, phaseOf, type Cell, type Doc, type Model, type ModelState } from './model.js';

/**
 * The runtime's operations over the abstract store, as `src/runtime/runtime.ts` performs them:
 * each one loads the agent's cell, sends the real machines the events the runtime sends, performs
 * the effects they request (`performEffect`), and commits through the fenced, compare-and-set
 * store. An operation is atomic between its commit points; one that flushes mid-way (create,
 * terminate, an explicit transition) leaves its remaining effects pending in the cell, and the
 * lane runs nothing else for that agent until they are done.
 */

/** An external side effect performed before any commit could fence it (for the split-brain check). */
export interface SideEffect {
  inst: number;
  agent: number;
  what: string;
}

export interface Outcome {
  label: string;
  /** The agent an agent operation was on (none for the environment's steps). */
  agent?: number;
  state: ModelState;
  sideEffects: SideEffect[];
}

/** A refused commit or operation (a plain object: the explorer throws many, and Error stacks are costly). */
export class Refused {
  constructor(readonly code: string) {}
}

/** Live agents per shard: the runtime's default (1,000) holds every agent of the model in one. */
const SHARD_CAPACITY = 1_000;

export interface OpOptions {
  /** Performs the effects a flush left pending (the rest of the same operation). */
  continuing?: boolean;
  allowTerminated?: boolean;
}

/** Context of one step: the state being built, and the side effects performed. */
export class StepContext {
  readonly sideEffects: SideEffect[] = [];

  constructor(
    readonly model: Model,
    readonly state: ModelState,
  ) {}

  holds(i: number): boolean {
    const inst = this.state.inst[i];
    return !!inst && this.state.lease.h === i && this.state.lease.tok === inst.tok;
  }

  // ------------------------------------------------------------ lease, actors, shards

  /** `onLeaseLost`: runs aborted, this instance's processes stopped, nothing more launched. */
  leaseLost(i: number): void {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    inst.lost = true;
    inst.runs = inst.runs.map(() => false);
    inst.launches = inst.launches.map((slots) => slots.map(() => false));
    this.state.procs = this.state.procs.map((slots) => slots.map((owner) => (owner === i ? -1 : owner)));
  }

  /** `attachToShard`: the shard it was on, else the newest first; a new shard when every one is full. */
  attach(i: number, a: number, cell: Cell): void {
    if (cell.actor) return;
    const inst = this.state.inst[i] as ModelState['inst'][number];
    const sup = this.model.machines.supervisor;
    const agentId = AGENTS[a] as string;
    const tryAttach = (shard: number): boolean => {
      const step = sup.step(inst.shards[shard] as number, { type: 'AGENT.ATTACHED', agentId });
      inst.shards[shard] = step.id;
      return hasId((sup.snapshot(step.id).context as SupervisorContext).agents, agentId);
    };
    const order = [...(cell.shard >= 0 ? [cell.shard] : []), ...inst.shards.map((_, k) => inst.shards.length - 1 - k).filter((k) => k !== cell.shard)];
    let found = order.find(tryAttach);
    if (found === undefined) {
      inst.shards.push(sup.initial({ shardId: inst.shards.length, capacity: SHARD_CAPACITY }));
      found = inst.shards.length - 1;
      if (!tryAttach(found)) throw new Error('a new shard refused an agent');
    }
    cell.actor = true;
    cell.shard = found;
  }

  /** `passivate`: the actor goes, its shard is told, the snapshot stays. */
  passivate(i: number, a: number): void {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    const cell = inst.cells[a];
    if (!cell?.actor) return;
    if (cell.shard >= 0) inst.shards[cell.shard] = this.model.machines.supervisor.step(inst.shards[cell.shard] as number, { type: 'AGENT.DETACHED', agentId: AGENTS[a] as string }).id;
    cell.actor = false;
    cell.shard = -1;
  }

  cell(i: number, a: number): Cell {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    let cell = inst.cells[a];
    if (!cell) {
      const entry = this.state.store[a];
      if (!entry) throw new Refused('agent_not_found');
      cell = { doc: entry.doc, fresh: true, actor: false, shard: -1, pending: [] };
      inst.cells[a] = cell;
    }
    return cell;
  }

  // ------------------------------------------------------------ commits

  /**
   * The store's commit: fence (the file's token and holder), then compare-and-set, then the
   * append. A fenced instance learns it at once (`commitFailed` → onLeaseLost); either refusal
   * rolls the actor back to the durable snapshot.
   */
  commit(i: number, a: number, draft: Draft): void {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    const { faults } = this.model;
    if (!this.holds(i) && !faults.skipFencing) {
      this.passivate(i, a);
      this.leaseLost(i);
      throw new Refused('lease_lost');
    }
    const cell = inst.cells[a];
    const entry = this.state.store[a];
    const stale = cell ? !cell.fresh : entry !== null;
    if (stale && !faults.skipCompareAndSet) {
      this.passivate(i, a);
      throw new Refused('version_conflict');
    }
    normalizeDoc(this.model, draft.doc);
    let chainEnd = entry?.chainEnd ?? this.model.machines.agent.path(draft.doc.a);
    let gap = entry?.gap ?? false;
    for (const [from, to] of draft.records) {
      if (from !== chainEnd) gap = true;
      chainEnd = to;
    }
    this.state.store[a] = { doc: draft.doc, chainEnd, gap };
    this.state.inst.forEach((other, k) => {
      const c = other.cells[a];
      if (k !== i && c) c.fresh = false;
    });
    if (cell) {
      cell.doc = draft.doc;
      cell.fresh = true;
    }
  }

  // ------------------------------------------------------------ effects (performEffect)

  /** Stop / terminate: this instance's processes stopped, the run aborted, tasks interrupted, triggers revoked. */
  private stopEffects(i: number, a: number, draft: Draft): void {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    this.state.procs[a] = (this.state.procs[a] as number[]).map((owner) => (owner === i ? -1 : owner));
    inst.runs[a] = false;
    draft.doc.t.forEach((task, slot) => {
      if (!liveTask(this.model, task)) return;
      inst.launches[a]![slot] = false;
      draft.task(slot, { type: 'INTERRUPT', reason: 'agent_stopped' });
      draft.send({ type: 'TASK.SETTLED', facts: draft.facts() });
    });
    draft.doc.trg = false;
    draft.touch();
  }

  private freshRecoveryPoint(draft: Draft): void {
    draft.doc.snap = { m: draft.doc.m, intact: true, schemaOk: true };
    draft.touch();
  }

  perform(i: number, a: number, draft: Draft, effect: AgentEffect, variant: 'ok' | 'timeout' = 'ok'): void {
    const { faults } = this.model;
    const doc = draft.doc;
    switch (effect) {
      case 'initialize':
        doc.trg = true;
        this.freshRecoveryPoint(draft);
        if (draft.send({ type: 'INITIALIZE.DONE' }) && draft.phase === 'active') doc.basis = 'verified';
        return;
      case 'sleep':
        // After a refused wake the incompatible recovery point stays (a fresh one would hide it).
        if (!doc.refused) this.freshRecoveryPoint(draft);
        doc.basis = 'asleep';
        return;
      case 'wake': {
        const snap = doc.snap;
        const verified = snap !== null && snap.intact && snap.schemaOk;
        if (faults.skipWakeVerification || verified) {
          doc.refused = false;
          if (draft.send({ type: 'WAKE.DONE' })) doc.basis = verified ? 'verified' : 'unverified';
        } else if (snap && snap.intact) {
          doc.refused = true;
          draft.send({ type: 'WAKE.REFUSED', reason: 'incompatible schema', hint: 'migrate' });
        } else {
          draft.send({ type: 'WAKE.FAILED', reason: snap ? 'checksum mismatch' : 'no recovery point' });
        }
        return;
      }
      case 'recover':
        // A termination that failed half-way waits in Recovering for an operator (isolated).
        if (doc.pendFrom === 'terminating') return;
        if (faults.recoverFromSnapshot && doc.snap) doc.m = doc.snap.m;
        this.freshRecoveryPoint(draft);
        if (draft.send({ type: 'RECOVER.DONE', snapshotId: 'snap-recovery' })) doc.basis = 'verified';
        return;
      case 'evolve':
        draft.send({ type: 'EVOLVE.DONE', accepted: true });
        return;
      case 'stop':
        this.stopEffects(i, a, draft);
        return;
      case 'terminate':
        if (variant === 'timeout') {
          draft.send({ type: 'TERMINATE.FAILED', phase: 'side_effects_applied', reason: 'timed out' });
          return;
        }
        this.stopEffects(i, a, draft);
        if (faults.keepTriggerOnTerminate) doc.trg = true;
        draft.send({ type: 'TERMINATE.DONE' });
        return;
    }
  }

  /** `drainEffects`: every effect requested meanwhile, answered in the same operation. */
  drain(i: number, a: number, draft: Draft, variant: 'ok' | 'timeout' = 'ok'): void {
    for (let round = 0; round < 16; round++) {
      const effects = draft.takeEffects();
      if (effects.length === 0) return;
      for (const effect of effects) this.perform(i, a, draft, effect, variant);
    }
  }

  // ------------------------------------------------------------ an operation's frame

  /**
   * Runs `body` on a draft of the agent's cell and commits it when it changed something. Ops on
   * an agent whose lane holds pending effects wait for them. Returns false when the
   * operation does not apply (nothing to do), so the explorer skips it.
   */
  op(i: number, a: number, body: (draft: Draft, cell: Cell, after: (effect: () => void) => void) => boolean | 'flush', options: OpOptions = {}): boolean {
    const inst = this.state.inst[i] as ModelState['inst'][number];
    if (!inst.up || inst.lost || !this.state.store[a]) return false;
    const cell = this.cell(i, a);
    if (cell.pending.length > 0 && !options.continuing) return false;
    // `mutate` refuses a terminated agent (agent_terminated) unless the operation allows it.
    if (!options.allowTerminated && !this.model.faults.acceptTerminated && phaseOf(this.model, cell.doc) === 'terminated') return false;
    const draft = new Draft(this.model, cell.doc);
    const afterCommit: Array<() => void> = [];
    const result = body(draft, cell, (effect) => afterCommit.push(effect));
    if (result === false) return false;
    if (draft.touchedActor) this.attach(i, a, cell);
    const later = result === 'flush' ? draft.takeEffects() : [];
    // A refused commit fails the operation: nothing of it continues.
    cell.pending = [];
    if (draft.dirty) this.commit(i, a, draft);
    cell.pending = later;
    for (const effect of afterCommit) effect();
    return true;
  }
}

export function freeSlot(model: Model, doc: Doc): number {
  const used = doc.t.filter((t) => t.m >= 0).length;
  if (used >= model.bounds.tasks) return -1;
  return doc.t.findIndex((t) => t.m < 0);
}

