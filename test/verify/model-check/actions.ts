import type { AgentEffect, AgentEvent } from '../../../machines/index.js';
import { Draft } from './draft.js';
import { AGENTS, INSTANCES, TASK_SLOTS, cloneState, downInstance, liveTask, normalize, needsRecovery, phaseOf, runIdOf, statusOf, type Doc, type Model, type ModelState } from './model.js';
import { freeSlot, Refused, StepContext, type Outcome } from './step-context.js';

/**
 * Every step the composed system can take from a state: the environment's (crashes, restarts,
 * lease expiry and renewal, a corrupted or other-schema recovery point, a process ending on its
 * own) and the runtime's operations on each agent from each instance.
 */
type Action = {
  label: string;
  /** A cheap precondition on the state before it is copied (most steps do not apply in most states). */
  when?: boolean;
  run: (ctx: StepContext) => boolean;
  /** The agent whose part the step changes (the shared part aside); none for the environment's own. */
  agent?: number;
};

const RUN_ID = 'run-1';
/** Queued input is "some" or "none": the scheduler reads no more. */
const MAX_QUEUE = 1;

function inst(ctx: StepContext, i: number) {
  return ctx.state.inst[i] as ModelState['inst'][number];
}

function newDoc(model: Model, a: number): Doc {
  const agentId = AGENTS[a] as string;
  return {
    a: model.machines.agent.initial({ agentId }),
    c: model.machines.continuation.initial({ agentId }),
    t: Array.from({ length: TASK_SLOTS }, () => ({ m: -1, e: 'none' as const })),
    q: 0,
    m: 0,
    snap: null,
    basis: 'none',
    trg: false,
    refused: false,
    pendFrom: null,
  };
}

function taskInitial(model: Model, a: number, slot: number): number {
  return model.machines.task.initial({ taskId: `task-${slot + 1}`, agentId: AGENTS[a], kind: 'command_task', acceptsInput: false });
}

// ---------------------------------------------------------------- boot (open + recoverAll)

/** `recoverAgent`: effects in doubt resolved, live tasks interrupted (their recorded process killed), the run ended, a transitional phase resumed. */
function recoverAgent(ctx: StepContext, i: number, a: number): void {
  ctx.op(i, a, (d, cell, after) => {
    d.doc.t.forEach((task) => {
      if (task.e === 'started') {
        task.e = 'in_doubt';
        d.touch();
      }
    });
    d.doc.t.forEach((task, slot) => {
      if (!liveTask(ctx.model, task)) return;
      if (task.e === 'done') (ctx.state.procs[a] as number[])[slot] = -1;
      d.task(slot, { type: 'INTERRUPT', reason: 'runtime_restarted' });
      d.doc.q = Math.min(d.doc.q + 1, MAX_QUEUE);
      d.send({ type: 'TASK.SETTLED', facts: d.facts() });
    });
    const runId = runIdOf(ctx.model, d.doc);
    if (runId) {
      // The claimed message is interrupted: it counts as pending again.
      d.doc.q = Math.min(d.doc.q + 1, MAX_QUEUE);
      d.send({ type: 'TURN.FINISHED', runId, facts: { ...d.facts(), current_run_id: null } }, !ctx.model.faults.unrecordedRecovery);
    }
    const effects: Partial<Record<string, AgentEffect>> = { initializing: 'initialize', waking: 'wake', recovering: 'recover', terminating: 'terminate', evolving: 'evolve' };
    const effect = effects[d.phase];
    if (effect) {
      d.touchedActor = true;
      ctx.perform(i, a, d, effect);
      ctx.drain(i, a, d);
    }
    if (!d.dirty) after(() => ctx.passivate(i, a));
    return true;
  }, { allowTerminated: true });
}

function boot(ctx: StepContext, i: number): boolean {
  const me = inst(ctx, i);
  const { lease } = ctx.state;
  // A restarted process is a new holder: it takes a lease only when none is live, with the next token.
  if (me.up || (lease.h !== -1 && lease.live) || lease.tok + 1 > ctx.model.bounds.maxToken) return false;
  ctx.state.lease = { h: i, tok: lease.tok + 1, live: true };
  ctx.state.inst[i] = { ...me, up: true, tok: lease.tok + 1, lost: false };
  ctx.state.store.forEach((_, a) => {
    const entry = ctx.state.store[a];
    if (entry && needsRecovery(ctx.model, entry.doc)) recoverAgent(ctx, i, a);
  });
  return true;
}

function down(ctx: StepContext, i: number): void {
  ctx.state.inst[i] = downInstance(ctx.state.store.length);
}

// ---------------------------------------------------------------- agent operations

function schedule(ctx: StepContext, i: number, a: number): boolean {
  return ctx.op(i, a, (d, cell, after) => {
    const phase = d.phase;
    if (phase !== 'active' && phase !== 'sleeping') return false;
    if (statusOf(ctx.model, d.doc) === 'stopped') {
      if (needsRecovery(ctx.model, d.doc) || !cell.actor) return false;
      after(() => ctx.passivate(i, a));
      return true;
    }
    if (runIdOf(ctx.model, d.doc)) return false;
    if (phase === 'sleeping') {
      if (d.doc.q === 0 || d.doc.refused) {
        if (!cell.actor) return false;
        after(() => ctx.passivate(i, a));
        return true;
      }
      d.send({ type: 'WAKE', reason: 'message queued' });
      ctx.drain(i, a, d);
      if (d.phase === 'sleeping') after(() => ctx.passivate(i, a));
      return true;
    }
    if (d.doc.q > 0) {
      if (!d.send({ type: 'TURN.START', runId: RUN_ID, facts: d.facts() })) return false;
      d.doc.q -= 1;
      d.continuation({ type: 'TRIGGER', trigger: { kind: 'operator_input', contentful: true }, prior: null, message: { kind: 'operator_prompt', origin: { kind: 'operator' }, task_id: null, metadata: {} } });
      d.continuation({ type: 'RESOLUTION.APPLIED' });
      after(() => {
        inst(ctx, i).runs[a] = true;
      });
      return true;
    }
    if (!d.send({ type: 'IDLE', facts: d.facts() })) return false;
    ctx.drain(i, a, d);
    if (d.phase === 'sleeping' && !ctx.model.faults.keepActorAsleep) after(() => ctx.passivate(i, a));
    return true;
  });
}

function spawnTask(ctx: StepContext, i: number, a: number, d: Draft, after: (effect: () => void) => void): boolean {
  const slot = freeSlot(ctx.model, d.doc);
  if (slot < 0) return false;
  d.doc.t[slot] = { m: taskInitial(ctx.model, a, slot), e: 'started' };
  d.send({ type: 'TASK.SPAWN', taskId: `task-${slot + 1}`, kind: 'command_task', acceptsInput: false });
  after(() => {
    (inst(ctx, i).launches[a] as boolean[])[slot] = true;
  });
  return true;
}

function finishTurn(ctx: StepContext, i: number, a: number, withTask: boolean): boolean {
  if (!inst(ctx, i).runs[a]) return false;
  return ctx.op(i, a, (d, _cell, after) => {
    if (runIdOf(ctx.model, d.doc) !== RUN_ID) return false;
    if (withTask && !spawnTask(ctx, i, a, d, after)) return false;
    inst(ctx, i).runs[a] = false;
    d.doc.m = Math.min(d.doc.m + 1, ctx.model.bounds.memory);
    d.send({ type: 'TURN.FINISHED', runId: RUN_ID, facts: { ...d.facts(), current_run_id: null } });
    return true;
  });
}

function launch(ctx: StepContext, i: number, a: number, slot: number): boolean {
  const me = inst(ctx, i);
  const launches = me.launches[a] as boolean[];
  if (!launches[slot]) return false;
  if (!me.cells[a]) {
    // A non-holder's copy was dropped (normalize): its launch reads the lease and learns it
    // was fenced (without that check, it spawns the command and then its commit is fenced).
    launches[slot] = false;
    if (ctx.model.faults.launchWithoutLeaseCheck) {
      (ctx.state.procs[a] as number[])[slot] = i;
      ctx.sideEffects.push({ inst: i, agent: a, what: `spawned task-${slot + 1}` });
    }
    ctx.leaseLost(i);
    return true;
  }
  return ctx.op(i, a, (d) => {
    launches[slot] = false;
    const task = d.doc.t[slot];
    if (!task || task.e !== 'started' || ctx.model.machines.task.path(task.m) !== 'queued') return true;
    // `stillHoldsLease` before the spawn (LeaseKeeper.stillHeld, src/runtime/host/lease-keeper.ts).
    if (!ctx.model.faults.launchWithoutLeaseCheck && !ctx.holds(i)) {
      ctx.leaseLost(i);
      return true;
    }
    (ctx.state.procs[a] as number[])[slot] = i;
    ctx.sideEffects.push({ inst: i, agent: a, what: `spawned task-${slot + 1}` });
    task.e = 'done';
    d.task(slot, { type: 'START' });
    return true;
  });
}

function taskExited(ctx: StepContext, a: number, slot: number): Action[] {
  const owner = (ctx.state.procs[a] as number[])[slot] as number;
  if (owner < 0) return [];
  const o = inst(ctx, owner);
  const label = `${INSTANCES[owner]}: task-${slot + 1} of ${AGENTS[a]} exits`;
  if (!o.up || o.lost) {
    // Nobody hears the result: the process just ends (its record is settled by a recovery).
    return [{ label: `${label} (unobserved)`, run: (c) => ((c.state.procs[a] as number[])[slot] = -1) === -1 }];
  }
  return [
    {
      label,
      run: (c) =>
        c.op(owner, a, (d) => {
          (c.state.procs[a] as number[])[slot] = -1;
          const task = d.doc.t[slot];
          if (!task || !liveTask(c.model, task)) return true;
          d.task(slot, { type: 'EXITED', exitCode: 0 });
          if (statusOf(c.model, d.doc) !== 'stopped') d.doc.q = Math.min(d.doc.q + 1, MAX_QUEUE);
          d.send({ type: 'TASK.SETTLED', facts: d.facts() });
          return true;
        }, { allowTerminated: true }),
    },
  ];
}

function agentActions(ctx: StepContext, i: number, a: number): Action[] {
  const name = (op: string) => `${INSTANCES[i]}: ${op}(${AGENTS[a]})`;
  const me = inst(ctx, i);
  if (!me.up || me.lost) return [];
  const entry = ctx.state.store[a];
  if (!entry) {
    return [
      {
        label: name('create'),
        run: (c) => {
          const draft = new Draft(c.model, newDoc(c.model, a));
          draft.touch();
          c.commit(i, a, draft);
          inst(c, i).cells[a] = { doc: draft.doc, fresh: true, actor: false, shard: -1, pending: [] };
          c.attach(i, a, inst(c, i).cells[a] as NonNullable<ModelState['inst'][number]['cells'][number]>);
          return true;
        },
      },
    ];
  }
  const cell = me.cells[a];
  const doc = cell?.doc ?? entry.doc;
  const idle = !cell || cell.pending.length === 0;
  const phase = phaseOf(ctx.model, doc);
  const status = statusOf(ctx.model, doc);
  const takes = (event: AgentEvent) => ctx.model.machines.agent.step(doc.a, event as AgentEvent & Record<string, unknown>).taken;
  const live = idle && (phase !== 'terminated' || !!ctx.model.faults.acceptTerminated);
  const actions: Action[] = [
    // Also from an instance that no longer holds the lease (its copy of the document was dropped).
    ...Array.from({ length: TASK_SLOTS }, (_, slot) => ({ label: name(`launch task-${slot + 1}`), when: idle && !!me.launches[a]?.[slot], run: (c: StepContext) => launch(c, i, a, slot) })),
    { label: name('initialize'), when: idle && phase === 'created', run: (c) => c.op(i, a, (d) => d.phase === 'created' && d.send({ type: 'INITIALIZE' }) && 'flush') },
    { label: name('prompt'), when: live && status !== 'stopped' && doc.q < MAX_QUEUE, run: (c) => c.op(i, a, (d) => statusOf(c.model, d.doc) !== 'stopped' && d.doc.q < MAX_QUEUE && (d.doc.q += 1) > 0 && (d.touch(), true)) },
    { label: name('exec'), when: live && phase === 'active' && status !== 'stopped' && freeSlot(ctx.model, doc) >= 0, run: (c) => c.op(i, a, (d, _cell, after) => d.phase === 'active' && statusOf(c.model, d.doc) !== 'stopped' && spawnTask(c, i, a, d, after)) },
    { label: name('stop'), when: live && status !== 'stopped' && takes({ type: 'STOP', reason: 'operator stop' }), run: (c) => c.op(i, a, (d) => statusOf(c.model, d.doc) !== 'stopped' && d.send({ type: 'STOP', reason: 'operator stop' }) && (c.drain(i, a, d), true)) },
    {
      label: name('start'),
      when: live && status === 'stopped' && takes({ type: 'START' }),
      run: (c) =>
        c.op(i, a, (d, _cell, after) => {
          if (statusOf(c.model, d.doc) !== 'stopped' || !d.send({ type: 'START' })) return false;
          c.drain(i, a, d);
          // Started back asleep (stopped asleep): `control` passivates it.
          if (d.phase === 'sleeping') after(() => c.passivate(i, a));
          return true;
        }),
    },
    { label: name('terminate'), when: live && takes({ type: 'TERMINATE', reason: 'operator delete' }), run: (c) => c.op(i, a, (d) => d.send({ type: 'TERMINATE', reason: 'operator delete' }) && 'flush') },
    { label: name('evolve'), when: live && takes({ type: 'EVOLVE', reason: 'candidate change' }), run: (c) => c.op(i, a, (d) => d.send({ type: 'EVOLVE', reason: 'candidate change' }) && 'flush') },
    {
      label: name('migrate'),
      when: live && !!doc.snap && doc.snap.intact && !doc.snap.schemaOk,
      run: (c) => c.op(i, a, (d) => {
        const snap = d.doc.snap;
        if (!snap || !snap.intact || snap.schemaOk) return false;
        d.doc.snap = { ...snap, schemaOk: true };
        d.doc.refused = false;
        d.touch();
        return true;
      }),
    },
  ];
  if (cell) {
    const stepped = idle && (phase === 'active' || phase === 'sleeping');
    actions.push({ label: name('scheduler step'), when: stepped, run: (c) => schedule(c, i, a) });
    actions.push({ label: name('turn finishes'), when: idle && !!me.runs[a], run: (c) => finishTurn(c, i, a, false) });
    actions.push({ label: name('turn finishes, starting a task'), when: idle && !!me.runs[a] && freeSlot(ctx.model, doc) >= 0, run: (c) => finishTurn(c, i, a, true) });
    for (const variant of ['ok', 'timeout'] as const) {
      if (variant === 'timeout' && !cell.pending.includes('terminate')) continue;
      actions.push({
        label: name(variant === 'ok' ? 'its effects complete' : 'its termination times out'),
        when: cell.pending.length > 0,
        run: (c) =>
          c.op(i, a, (d, live, after) => {
            if (live.pending.length === 0) return false;
            for (const effect of live.pending) c.perform(i, a, d, effect as AgentEffect, variant);
            c.drain(i, a, d);
            // `terminate()` passivates the agent once it is terminated.
            if (d.phase === 'terminated') after(() => c.passivate(i, a));
            return true;
          }, { continuing: true }),
      });
    }
    if (cell.actor && (ctx.state.budget.failures[a] ?? 0) > 0) {
      actions.push({
        label: name('actor throws'),
        run: (c) => {
          (c.state.budget.failures[a] as number) -= 1;
          const live = inst(c, i).cells[a] as NonNullable<typeof cell>;
          // The shard counts it out and reports it; the runtime restores it into Recovering.
          const shards = inst(c, i).shards;
          if (live.shard >= 0) shards[live.shard] = c.model.machines.supervisor.step(shards[live.shard] as number, { type: 'AGENT.FAILED', agentId: AGENTS[a] as string, error: 'boom' }).id;
          live.actor = false;
          live.shard = -1;
          c.op(i, a, (d) => d.send({ type: 'RECOVER', reason: 'actor failed' }) && (c.drain(i, a, d), true), { allowTerminated: true });
          return true;
        },
      });
    }
  }
  return actions;
}

// ---------------------------------------------------------------- environment

/** The disk's copy of an agent's recovery point changes (documents are never edited in place). */
function editStored(state: ModelState, a: number, snap: NonNullable<Doc['snap']>): void {
  const entry = state.store[a];
  if (entry) state.store[a] = { ...entry, doc: { ...entry.doc, snap } };
}

function environment(ctx: StepContext): Action[] {
  const actions: Action[] = [];
  const { state, model } = ctx;
  INSTANCES.forEach((name, i) => {
    const me = inst(ctx, i);
    if (!me.up) {
      const free = state.lease.h === -1 || !state.lease.live;
      actions.push({ label: `${name}: starts (acquires the lease, recovers)`, when: free && state.lease.tok < model.bounds.maxToken, run: (c) => boot(c, i) });
      return;
    }
    if (state.budget.crashes > 0) {
      actions.push({ label: `${name}: crashes`, run: (c) => ((c.state.budget.crashes -= 1), down(c, i), true) });
      if (!me.lost) {
        actions.push({
          label: `${name}: closes (releases the lease)`,
          run: (c) => {
            c.state.budget.crashes -= 1;
            c.state.procs = c.state.procs.map((slots) => slots.map((owner) => (owner === i ? -1 : owner)));
            if (c.holds(i)) c.state.lease = { ...c.state.lease, live: false };
            down(c, i);
            return true;
          },
        });
      }
    }
    if (!me.lost && me.tok >= 0) {
      const held = state.lease.h === i && state.lease.tok === me.tok;
      actions.push({
        label: `${name}: renews the lease`,
        when: !held || !state.lease.live,
        run: (c) => {
          if (!c.holds(i)) c.leaseLost(i);
          else if (c.state.lease.live) return false;
          else c.state.lease = { ...c.state.lease, live: true };
          return true;
        },
      });
    }
  });
  if (state.lease.live) actions.push({ label: 'the lease expires (its holder did not renew in time)', run: (c) => ((c.state.lease = { ...c.state.lease, live: false }), true) });
  state.store.forEach((_, a) => {
    const agent = AGENTS[a] as string;
    // The disk changes under no live copy: an instance holding one would write it back whole.
    const loaded = state.inst.some((i) => i.up && !i.lost && i.cells[a]);
    const snap = loaded ? undefined : state.store[a]?.doc.snap;
    if (snap?.intact && (state.budget.corruptions[a] ?? 0) > 0) {
      actions.push({ label: `${agent}'s recovery point is corrupted on disk`, run: (c) => (((c.state.budget.corruptions[a] as number) -= 1), editStored(c.state, a, { ...snap, intact: false }), true) });
    }
    if (snap?.schemaOk && (state.budget.schemaChanges[a] ?? 0) > 0) {
      actions.push({ label: `${agent}'s recovery point is of another schema version`, run: (c) => (((c.state.budget.schemaChanges[a] as number) -= 1), editStored(c.state, a, { ...snap, schemaOk: false }), true) });
    }
    for (let slot = 0; slot < TASK_SLOTS; slot++) actions.push(...taskExited(ctx, a, slot).map((action) => ({ ...action, agent: a })));
  });
  return actions;
}

/** Every enabled step from `state`, each with the state it leads to. */
export function successors(model: Model, state: ModelState): Outcome[] {
  const probe = new StepContext(model, state);
  const actions = [...environment(probe), ...INSTANCES.flatMap((_, i) => state.store.flatMap((_, a) => agentActions(probe, i, a).map((action) => ({ ...action, agent: a }))))];
  const out: Outcome[] = [];
  for (const action of actions) {
    if (action.when === false) continue;
    const ctx = new StepContext(model, cloneState(state));
    try {
      if (!action.run(ctx)) continue;
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
    }
    out.push({ label: action.label, state: normalize(model, ctx.state), sideEffects: ctx.sideEffects, agent: action.agent });
  }
  return out;
}

