import { isDeepStrictEqual } from 'node:util';
import type { ContinuationEvent } from '../../../machines/index.js';
import { wakeHintDisposition } from '../../../machines/contracts/index.js';
import type { AgentStatus } from '../../../src/domain/index.js';
import type { ModelPath, ModelStep } from '../paths.js';
import { INIT, type Driver } from './executor.js';
import { isInjectedFault, type StateChange } from './gate-store.js';
import { eventually, Harness } from './harness.js';

/** Where the agent stands while the path drives its continuation actor. */
type Posture = 'awake_idle' | 'awake_running' | 'stopped';

const STATE_OF: Readonly<Record<Posture, string>> = {
  awake_idle: 'active.awakeIdle',
  awake_running: 'active.awakeRunning',
  stopped: 'stopped',
};

export interface ContinuationContext {
  h: Harness;
  agentId: string;
  posture: Posture;
  /** Waits created by the path, newest last. */
  waits: string[];
}

let agents = 0;

/**
 * Continuation paths: the agent's `continuation` child, driven with `createWait`/`cancelWait`,
 * `wake` (wake hints) and the scheduler's claim of a wake-hint tick. The agent itself is moved only
 * between three postures (idle, running a waiting turn, stopped) that decide each hint's
 * disposition; the gate holds it there, so a queued tick is claimed only when the path says so.
 */
export class ContinuationDriver implements Driver<ContinuationContext> {
  readonly machine = 'continuation' as const;

  automatic(): boolean {
    return false;
  }

  async setup(): Promise<ContinuationContext> {
    const h = await Harness.open({ killGraceMs: 1_000, leaseTtlMs: 3_000 });
    agents += 1;
    const agentId = `model-cont-agent-${process.pid}-${agents}`;
    h.gate.expect(agentId, [{ from: 'created', to: 'initializing' }, { from: 'initializing', to: STATE_OF.awake_idle }], 'hold');
    await h.runtime.createAgent({ agent_id: agentId, config: { turn_runner: 'scripted', model: 'scripted' } });
    await eventually(() => h.gate.pending(agentId).length === 0, 'the agent to initialize');
    return { h, agentId, posture: 'awake_idle', waits: [] };
  }

  async dispose(ctx: ContinuationContext): Promise<void> {
    await ctx.h.dispose();
  }

  /** Lets exactly `changes` through, runs `call`, waits until they are committed, then holds again. */
  private async move(ctx: ContinuationContext, changes: StateChange[], call: () => Promise<unknown>): Promise<void> {
    const { gate } = ctx.h;
    await ctx.h.barrier(ctx.agentId);
    gate.expect(ctx.agentId, changes, 'hold');
    try {
      await call();
    } catch (error) {
      if (!isInjectedFault(error)) throw error;
    }
    await eventually(() => gate.pending(ctx.agentId).length === 0, `the agent to commit ${JSON.stringify(gate.pending(ctx.agentId))}; refused ${JSON.stringify(gate.refusalsOf(ctx.agentId).map((r) => r.attempted))}`);
  }

  private async currentRun(ctx: ContinuationContext): Promise<string> {
    return eventually(async () => {
      const runId = (await ctx.h.runtime.getSummary(ctx.agentId)).execution.run_id;
      return runId !== null && ctx.h.runner.isParked(runId) ? runId : undefined;
    }, 'the turn to wait in the runner');
  }

  /** Ends the waiting turn; with `claimNext` the scheduler may claim the next message (a tick). */
  private async finishTurn(ctx: ContinuationContext, claimNext: boolean): Promise<void> {
    const runId = await this.currentRun(ctx);
    const changes = [{ from: STATE_OF.awake_running, to: STATE_OF.awake_idle }];
    if (claimNext) changes.push({ from: STATE_OF.awake_idle, to: STATE_OF.awake_running });
    await this.move(ctx, changes, async () => ctx.h.runner.finish(runId, { actions: [], text: 'done' }));
    ctx.posture = claimNext ? 'awake_running' : 'awake_idle';
  }

  private async toPosture(ctx: ContinuationContext, target: Posture): Promise<void> {
    const { h, agentId } = ctx;
    if (ctx.posture === target) return;
    if (target === 'stopped') {
      await this.move(ctx, [{ from: STATE_OF[ctx.posture], to: STATE_OF.stopped }], () => h.runtime.control(agentId, { action: 'stop' }));
      ctx.posture = 'stopped';
      return;
    }
    if (ctx.posture === 'stopped') {
      await this.move(ctx, [{ from: STATE_OF.stopped, to: STATE_OF.awake_idle }], () => h.runtime.control(agentId, { action: 'start' }));
      ctx.posture = 'awake_idle';
    } else if (ctx.posture === 'awake_running') {
      await this.finishTurn(ctx, false);
    }
    if (target === 'awake_running') {
      // An operator prompt is first in line (interject), ahead of any queued tick.
      await this.move(ctx, [{ from: STATE_OF.awake_idle, to: STATE_OF.awake_running }], () => h.runtime.prompt(agentId, { text: 'keep going' }));
      await this.currentRun(ctx);
      ctx.posture = 'awake_running';
    }
  }

  async run(ctx: ContinuationContext, path: ModelPath, chunk: readonly number[]): Promise<void> {
    const index = chunk[0] as number;
    if (index === INIT) return;
    const { h, agentId } = ctx;
    const event = (path.steps[index] as ModelStep).event as ContinuationEvent;
    switch (event.type) {
      case 'WAIT.SET': {
        const wait = await h.runtime.createWait(agentId, { wake: 'operator_input', reason: event.reason });
        ctx.waits.push(wait.id);
        return;
      }
      case 'WAIT.CANCEL': {
        const waitId = ctx.waits.at(-1);
        if (!waitId) throw new Error('WAIT.CANCEL needs a wait');
        await h.runtime.cancelWait(agentId, waitId);
        return;
      }
      case 'WAKE_HINT': {
        await this.toPosture(ctx, event.status as Posture);
        const status: AgentStatus = (await h.runtime.getSummary(agentId)).agent.status;
        if (status !== event.status) throw new Error(`the hint is for an agent ${event.status}, the agent is ${status}`);
        const { disposition } = await h.runtime.wake(agentId, { reason: event.hint.reason, source: event.hint.source ?? 'control' });
        const expected = wakeHintDisposition({ status: event.status, queue_depth: event.queueDepth });
        if (disposition !== expected) throw new Error(`the runtime answered ${disposition} to a hint the model classifies ${expected}`);
        return;
      }
      case 'TICK.CONSUMED': {
        // The scheduler claims the queued tick as soon as the agent is idle and not held.
        if (ctx.posture === 'awake_running') return this.finishTurn(ctx, true);
        if (ctx.posture === 'stopped') {
          await this.move(ctx, [{ from: STATE_OF.stopped, to: STATE_OF.awake_idle }, { from: STATE_OF.awake_idle, to: STATE_OF.awake_running }], () => h.runtime.control(agentId, { action: 'start' }));
        } else {
          await this.move(ctx, [{ from: STATE_OF.awake_idle, to: STATE_OF.awake_running }], () => h.runtime.takeSnapshot(agentId));
        }
        ctx.posture = 'awake_running';
        return;
      }
      default:
        throw new Error(`no runtime mechanism for ${event.type}`);
    }
  }

  async verify(ctx: ContinuationContext, path: ModelPath, chunk: readonly number[]): Promise<void> {
    const index = chunk[0] as number;
    const expected = index === INIT ? path.initial.value : (path.steps[index] as ModelStep).after.value;
    const read = async (): Promise<unknown> => (await ctx.h.runtime.getSummary(ctx.agentId)).statechart['continuation'];
    // Twice in a row: a refused (rolled back) operation can show a state for a moment.
    await eventually(async () => {
      if (!isDeepStrictEqual(await read(), expected)) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return isDeepStrictEqual(await read(), expected);
    }, `statechart.continuation to be ${JSON.stringify(expected)} (it is ${JSON.stringify(await read())})`);
  }
}
