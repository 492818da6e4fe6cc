import { isDeepStrictEqual } from 'node:util';
import type { EventObject } from 'xstate';
import type { AgentEvent } from '../../../machines/index.js';
import { DomainError, type TurnResult } from '../../../src/domain/index.js';
import { statePath } from '../../../src/runtime/agent/tx.js';
import { transitionKey, type ModelPath, type ModelStep } from '../paths.js';
import { runtimeApi, type AgentApi } from './agent-api.js';
import { eventAt, INIT, type Driver } from './executor.js';
import { isInjectedFault, type StateChange } from './gate-store.js';
import { commandStarted, controlledCommand, eventually, Harness, releaseCommand, type FaultPlan, type HarnessOptions } from './harness.js';
import { corruptLatestSnapshot, makeLatestSnapshotNewer } from './snapshot-files.js';

/** Events the runtime produces itself once the preceding step happened (effect answers, the idle scheduler). */
const AUTOMATIC = new Set<AgentEvent['type']>([
  'INITIALIZE.DONE',
  'WAKE.DONE',
  'WAKE.FAILED',
  'WAKE.REFUSED',
  'RECOVER.DONE',
  'EVOLVE.DONE',
  'TERMINATE.DONE',
  'TERMINATE.FAILED',
  'IDLE',
  // Armed in the runtime's `faults` option by the chunk that holds them (see FAULTS).
  'INITIALIZE.FAILED',
  'SLEEP.FAILED',
  'RECOVER.FAILED',
  'EVOLVE.FAILED',
]);

/** The effect each injected failure is armed on (RuntimeOptions.faults). */
const FAULTS: Readonly<Partial<Record<AgentEvent['type'], keyof FaultPlan['hooks']>>> = {
  'INITIALIZE.FAILED': 'initialize',
  'SLEEP.FAILED': 'sleep',
  'RECOVER.FAILED': 'recover',
  'EVOLVE.FAILED': 'evolve',
};

/**
 * Runtime options of agent paths: a terminate effect times out after 1 s, while a command that
 * ignores SIGTERM gets 5 s before SIGKILL, so TERMINATE.FAILED has a real cause.
 */
export const AGENT_RUNTIME_OPTIONS: HarnessOptions = { effectTimeoutMs: 1_000, killGraceMs: 5_000, leaseTtlMs: 3_000 };

export interface AgentContext {
  h: Harness;
  api: AgentApi;
  agentId: string;
  /** Highest event_seq whose state change was matched to a model step. */
  seq: number;
  /** The task a TASK.SPAWN step started, and its control directory. */
  spawned: { taskId: string; dir: string } | null;
  /** Control directories of tasks started by a turn (TURN.FINISHED with an active task). */
  turnTasks: string[];
  /** A WAKE.REFUSED left the agent asleep on an incompatible snapshot. */
  refused: boolean;
  /** The aborted run a stale TURN.FINISHED step finished late. */
  staleRun: string | null;
}

/** The isStaleRun branch: a finish for a run that is no longer current. */
const STALE_FINISH = transitionKey({ source: 'agent.active.awakeRunning', event: 'TURN.FINISHED', branch: 0 });

let agentCount = 0;

function changeOf(step: ModelStep): StateChange | null {
  const from = statePath(step.before.value);
  const to = statePath(step.after.value);
  return from === to ? null : { from, to };
}

function stepsOf(path: ModelPath, chunk: readonly number[]): ModelStep[] {
  return chunk.filter((i) => i !== INIT).map((i) => path.steps[i] as ModelStep);
}

function nextType(path: ModelPath, index: number): string | undefined {
  return path.steps[index + 1]?.event.type;
}

/** Runs `call`; an injected store fault is expected when it comes with a refusal the gate made meanwhile. */
async function tolerateHold(ctx: AgentContext, call: () => Promise<unknown>): Promise<void> {
  const before = ctx.h.gate.refusalsOf(ctx.agentId).length;
  try {
    await call();
  } catch (error) {
    if (isInjectedFault(error) && ctx.h.gate.refusalsOf(ctx.agentId).length > before) return;
    throw error;
  }
}

async function currentRun(ctx: AgentContext): Promise<string> {
  return eventually(async () => {
    const runId = (await ctx.api.summary(ctx.agentId)).execution.run_id;
    return runId !== null && ctx.h.runner.isParked(runId) ? runId : undefined;
  }, 'a turn waiting in the runner');
}

/** How the driver reaches the runtime: its port directly, or HTTP on a socket. */
export type AgentTransport = (h: Harness) => Promise<{ api: AgentApi; close: () => Promise<void> }>;

const direct: AgentTransport = async (h) => ({ api: runtimeApi(() => h.runtime), close: async () => {} });

/**
 * Agent paths. Each chunk is one API call (createAgent, transition, control, terminate, prompt,
 * abortRun, execCommand; the runner finishing a turn; a command exiting) followed by the steps the
 * runtime takes by itself. Before the call the gate is told exactly the state changes of the
 * chunk; mid-path everything else is refused, so the agent rests where the model does. After it:
 * the runtime's `transition_committed` events must be the model's changes, one for one; at a rest
 * the live `statechart.agent` must equal the model's value; steps that keep the value (TASK.SPAWN,
 * task.finished) show in the agent's actor tree instead.
 */
export class AgentDriver implements Driver<AgentContext> {
  readonly machine = 'agent' as const;
  private readonly closers = new Map<AgentContext, () => Promise<void>>();

  constructor(private readonly transport: AgentTransport = direct) {}

  automatic(path: ModelPath, index: number): boolean {
    const type = eventAt(path, index).type;
    // createAgent commits Created and sends INITIALIZE in the same call.
    if (type === 'INITIALIZE') return index === 0;
    return AUTOMATIC.has(type as AgentEvent['type']);
  }

  async setup(path: ModelPath): Promise<AgentContext> {
    const h = await Harness.open(AGENT_RUNTIME_OPTIONS);
    h.runner.holdAborted = path.steps.some((step) => step.fired.includes(STALE_FINISH));
    const { api, close } = await this.transport(h);
    agentCount += 1;
    const ctx: AgentContext = { h, api, agentId: `model-agent-${process.pid}-${agentCount}`, seq: 0, spawned: null, turnTasks: [], refused: false, staleRun: null };
    this.closers.set(ctx, close);
    return ctx;
  }

  async dispose(ctx: AgentContext): Promise<void> {
    await this.closers.get(ctx)?.();
    this.closers.delete(ctx);
    await ctx.h.dispose();
  }

  async run(ctx: AgentContext, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void> {
    const changes = stepsOf(path, chunk).map(changeOf).filter((c): c is StateChange => c !== null);
    if (chunk[0] !== INIT) await ctx.h.barrier(ctx.agentId);
    // Mid-path, the runtime must rest where the model does: any other change is refused.
    ctx.h.gate.expect(ctx.agentId, changes, last ? 'open' : 'hold');
    for (const step of stepsOf(path, chunk)) {
      const event = step.event as AgentEvent;
      const effect = FAULTS[event.type];
      if (effect && 'reason' in event) ctx.h.faults.arm(effect, { reason: String(event.reason), recoverable: 'recoverable' in event && event.recoverable });
    }
    const failsInit = stepsOf(path, chunk).some((s) => s.event.type === 'INITIALIZE.FAILED');
    await tolerateHold(ctx, () => this.act(ctx, path, chunk[0] as number, failsInit));
  }

  private async act(ctx: AgentContext, path: ModelPath, index: number, failsInit: boolean): Promise<void> {
    const { api, agentId, h } = ctx;
    if (index === INIT) return this.create(ctx, failsInit);
    const step = path.steps[index] as ModelStep;
    const event = step.event as AgentEvent;
    switch (event.type) {
      case 'INITIALIZE':
        // Back in Created after a failed initialization: the retried create initializes again.
        return this.create(ctx, failsInit);
      case 'RECOVER':
        return api.transition(agentId, 'recovering', event.reason);
      case 'EVOLVE':
        return api.transition(agentId, 'evolving', event.reason);
      case 'STOP':
        return api.control(agentId, 'stop');
      case 'START':
        return api.control(agentId, 'start');
      case 'TERMINATE':
        if (nextType(path, index) === 'TERMINATE.FAILED' && !ctx.spawned) throw new Error('TERMINATE.FAILED needs a task that ignores SIGTERM (a TASK.SPAWN step first)');
        return api.terminate(agentId);
      case 'WAKE':
        return this.wake(ctx, path, index, event.reason);
      case 'TURN.START':
        // `awaitingTask` → TURN.START needs new input too: an operator prompt is the first in line.
        return api.prompt(agentId, 'next step');
      case 'TURN.FINISHED':
        return step.fired.includes(STALE_FINISH) ? this.finishStaleRun(ctx) : this.finishTurn(ctx, event);
      case 'TURN.ABORT':
        return api.abortRun(agentId);
      case 'TASK.SPAWN': {
        const dir = await h.controlDir(`spawn-${index}`);
        const ignoreTerm = path.steps.slice(index + 1).some((s) => s.event.type === 'TERMINATE.FAILED');
        const taskId = await api.execCommand(agentId, controlledCommand(dir, { ignoreTerm }), 'model path task');
        ctx.spawned = { taskId, dir };
        return;
      }
      case 'task.finished': {
        if (!ctx.spawned) throw new Error('task.finished needs a TASK.SPAWN step first');
        return releaseCommand(ctx.spawned.dir, 0);
      }
      case 'TASK.SETTLED': {
        const dir = ctx.turnTasks.shift();
        if (!dir) throw new Error('TASK.SETTLED needs the task a turn started');
        return releaseCommand(dir, 0);
      }
      default:
        throw new Error(`no runtime mechanism for ${event.type} from ${JSON.stringify(step.before.value)} (allow-list it in coverage.ts)`);
    }
  }

  /** A first create whose initialization fails provisions no capability, and says so. */
  private async create(ctx: AgentContext, failsInit: boolean): Promise<void> {
    try {
      await ctx.api.createAgent(ctx.agentId, `create-${ctx.agentId}`);
    } catch (error) {
      if (!(failsInit && error instanceof DomainError && error.code === 'internal_error' && error.message.includes('did not provision a capability'))) throw error;
    }
  }

  /** WAKE through `to: active`; the snapshot on disk decides what the wake check answers next. */
  private async wake(ctx: AgentContext, path: ModelPath, index: number, reason: string): Promise<void> {
    const next = nextType(path, index);
    if (next === 'WAKE.FAILED') await ctx.h.reopen({ agentId: ctx.agentId, change: corruptLatestSnapshot });
    else if (next === 'WAKE.REFUSED') await ctx.h.reopen({ agentId: ctx.agentId, change: makeLatestSnapshotNewer });
    else if (ctx.refused) {
      // The operator's way out of a refusal (`holon-xstate migrate`).
      await ctx.h.runtime.migrate(ctx.agentId);
      ctx.refused = false;
    }
    if (next !== 'WAKE.REFUSED') return ctx.api.transition(ctx.agentId, 'active', reason);
    ctx.refused = true;
    // The refused wake is the answer to this request: the runtime reports it as an error.
    await ctx.api.transition(ctx.agentId, 'active', reason).then(
      () => {
        throw new Error('a wake from an incompatible snapshot was not refused');
      },
      (error: unknown) => {
        if (!(error instanceof DomainError && error.code === 'snapshot_incompatible')) throw error;
      },
    );
  }

  /** A run aborted earlier (its runner held it) finishes now, while a newer run is current. */
  private async finishStaleRun(ctx: AgentContext): Promise<void> {
    const current = await currentRun(ctx);
    const stale = ctx.h.runner.parkedRuns().find((runId) => runId !== current);
    if (!stale) throw new Error('a stale TURN.FINISHED needs an aborted run still waiting in the runner (a TURN.ABORT step first)');
    ctx.staleRun = stale;
    ctx.h.runner.finish(stale, { actions: [], text: 'late' });
  }

  /** Ends the waiting turn; an active task in the model's facts is one the turn starts. */
  private async finishTurn(ctx: AgentContext, event: Extract<AgentEvent, { type: 'TURN.FINISHED' }>): Promise<void> {
    const runId = await currentRun(ctx);
    let result: TurnResult = { actions: [], text: 'done' };
    if (event.facts.tasks.length > 0) {
      const dir = await ctx.h.controlDir(`turn-${ctx.turnTasks.length}-${runId}`);
      ctx.turnTasks.push(dir);
      result = { actions: [{ type: 'exec_command', cmd: controlledCommand(dir), summary: 'task of the turn' }], text: 'started a task' };
    }
    if (!ctx.h.runner.finish(runId, result)) throw new Error(`turn ${runId} is not waiting`);
  }

  async verify(ctx: AgentContext, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void> {
    const steps = stepsOf(path, chunk);
    const changes = steps.map(changeOf).filter((c): c is StateChange => c !== null);
    const { gate } = ctx.h;
    await eventually(
      () => gate.pending(ctx.agentId).length === 0,
      `the runtime to record ${JSON.stringify(gate.pending(ctx.agentId))}; it attempted ${JSON.stringify(gate.refusalsOf(ctx.agentId).map((r) => r.attempted))} and committed ${JSON.stringify(gate.history(ctx.agentId))}`,
    );
    // Each committed change carries the actor's state value before and after it.
    const recorded = await ctx.api.stateChanges(ctx.agentId, ctx.seq);
    const seen = recorded.map(({ from, to }) => ({ from, to }));
    if (!isDeepStrictEqual(last ? seen.slice(0, changes.length) : seen, changes)) {
      throw new Error(`the runtime committed ${JSON.stringify(seen)}, the model takes ${JSON.stringify(changes)}`);
    }
    ctx.seq = recorded[changes.length - 1]?.event_seq ?? ctx.seq;
    if (ctx.h.faults.pending() > 0) throw new Error('an armed effect failure was never injected: the runtime did not run that effect');
    for (const step of steps) await this.evidence(ctx, step);
    if (!last) {
      const expected = steps.at(-1)?.after.value ?? path.initial.value;
      await eventually(async () => isDeepStrictEqual((await ctx.api.summary(ctx.agentId)).statechart['agent'], expected), `statechart.agent to be ${JSON.stringify(expected)}`);
    }
  }

  /** Steps that keep the state value leave no TransitionRecord: their own trace instead. */
  private async evidence(ctx: AgentContext, step: ModelStep): Promise<void> {
    const event: EventObject = step.event;
    if (step.fired.includes(STALE_FINISH) && ctx.staleRun) {
      // The machine itself heard the late finish, and the current run goes on.
      const staleRun = ctx.staleRun;
      await eventually(() => ctx.h.actors.eventsOf(ctx.agentId).some((e) => e.type === 'TURN.FINISHED' && (e as { runId?: string }).runId === staleRun), `the agent actor to receive the stale finish of ${staleRun}`);
      await currentRun(ctx);
    }
    if (FAULTS[event.type as AgentEvent['type']]) {
      // The injected failure is logged like a real one: a failed side effect with its reason.
      const reason = (event as { reason?: string }).reason;
      const { events } = await ctx.h.runtime.eventsPage(ctx.agentId, { limit: 512, order: 'desc' });
      if (!events.some((e) => e.type === 'transition_phase' && e.payload['phase'] === 'side_effects_failed' && e.payload['detail'] === reason)) {
        throw new Error(`${event.type}: no failed side effect "${reason}" in the agent's events`);
      }
    }
    const spawned = ctx.spawned;
    if (event.type === 'TASK.SPAWN' && spawned) {
      // Running, not just queued: a later step may need its process (TERMINATE.FAILED does).
      await eventually(
        async () => (await ctx.api.summary(ctx.agentId)).statechart[spawned.taskId] === 'running' && (await commandStarted(spawned.dir)),
        `task ${spawned.taskId} to run as a child of the agent actor`,
      );
    }
    if (event.type === 'task.finished' && spawned) {
      await eventually(async () => {
        const chart = (await ctx.api.summary(ctx.agentId)).statechart;
        return !(spawned.taskId in chart) && (await ctx.h.runtime.getTask(ctx.agentId, spawned.taskId)).status === 'completed';
      }, `task ${spawned.taskId} to complete and leave the agent actor`);
    }
  }
}
