import { isDeepStrictEqual } from 'node:util';
import type { ContinuationEvent } from '../../../machines/index.js';
import { wakeHintDisposition } from '../../../machines/contracts/index.js';
import type { AgentStatus } from '../../../src/domain/index.js';
import type { Posture } from '../models.js';
import type { ModelPath, ModelStep } from '../paths.js';
import { eventAt, INIT, type Driver } from './executor.js';
import { isInjectedFault, type StateChange } from './gate-store.js';
import { eventually, Harness } from './harness.js';

/** The agent's state path in each posture, as the gate sees its changes. */
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
 * `wake` (wake hints), the scheduler's claims (TRIGGER and RESOLUTION.APPLIED: a prompt, or a
 * queued wake-hint tick, which is also TICK.CONSUMED) and the end of a turn with a stored hint
 * (HINT.FLUSH). Between them the agent is moved only between three postures (idle, running a
 * waiting turn, stopped) that decide each hint's disposition; only a claim starts a turn. The gate
 * holds the agent in its posture, so a queued tick is claimed only when the path says so.
 */
export class ContinuationDriver implements Driver<ContinuationContext> {
  readonly machine = 'continuation' as const;

  automatic(path: ModelPath, index: number): boolean {
    // The rest of a claim: the runtime applies the resolution at once, and consumes a tick it claimed.
    const type = eventAt(path, index).type;
    return type === 'RESOLUTION.APPLIED' || type === 'TICK.CONSUMED';
  }

  async setup(): Promise<ContinuationContext> {
    // One message per turn: the model's TRIGGER is the claim of ONE message (a prompt, or the queued
    // tick), each observed on its own; how a turn takes several is the contract's (`mayJoinTurn`)
    // and test/runtime/drain.test.ts's.
    const h = await Harness.open({ killGraceMs: 1_000, leaseTtlMs: 3_000, turnMaxMessages: 1 });
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

  /** Ends the waiting turn (the scheduler's claim of a queued tick, if any, stays held). */
  private async finishTurn(ctx: ContinuationContext): Promise<void> {
    const runId = await this.currentRun(ctx);
    await this.move(ctx, [{ from: STATE_OF.awake_running, to: STATE_OF.awake_idle }], async () => ctx.h.runner.finish(runId, { actions: [], text: 'done' }));
    ctx.posture = 'awake_idle';
  }

  /** Idle or stopped: a running agent's turn ends, a stopped agent starts again, and the reverse. */
  private async toPosture(ctx: ContinuationContext, target: Exclude<Posture, 'awake_running'>): Promise<void> {
    const { h, agentId } = ctx;
    if (ctx.posture === target) return;
    if (target === 'stopped') {
      await this.move(ctx, [{ from: STATE_OF[ctx.posture], to: STATE_OF.stopped }], () => h.runtime.control(agentId, { action: 'stop' }));
    } else if (ctx.posture === 'stopped') {
      await this.move(ctx, [{ from: STATE_OF.stopped, to: STATE_OF.awake_idle }], () => h.runtime.control(agentId, { action: 'start' }));
    } else {
      await this.finishTurn(ctx);
    }
    ctx.posture = target;
  }

  /** TRIGGER of an operator prompt: an operator prompt is first in line (interject), ahead of any queued tick. */
  private async claimPrompt(ctx: ContinuationContext): Promise<void> {
    await this.toPosture(ctx, 'awake_idle');
    await this.move(ctx, [{ from: STATE_OF.awake_idle, to: STATE_OF.awake_running }], () => ctx.h.runtime.prompt(ctx.agentId, { text: 'keep going' }));
    await this.currentRun(ctx);
    ctx.posture = 'awake_running';
  }

  /**
   * TRIGGER of the queued wake-hint tick, which the gate held while the agent rested idle: the
   * scheduler claims it at its next look (the snapshot's operation kicks it).
   */
  private async claimTick(ctx: ContinuationContext): Promise<void> {
    if (ctx.posture !== 'awake_idle') throw new Error('a tick is claimed by an idle agent');
    await this.move(ctx, [{ from: STATE_OF.awake_idle, to: STATE_OF.awake_running }], () => ctx.h.runtime.takeSnapshot(ctx.agentId));
    ctx.posture = 'awake_running';
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
      case 'TRIGGER':
        return event.trigger.kind === 'system_tick' ? this.claimTick(ctx) : this.claimPrompt(ctx);
      case 'HINT.FLUSH':
        // The turn ends; the scheduler replays the stored hint as a tick (its claim stays held).
        if (ctx.posture !== 'awake_running') throw new Error('HINT.FLUSH needs a turn that ends');
        return this.finishTurn(ctx);
      case 'WAKE_HINT': {
        if (event.status === 'awake_running') {
          if (ctx.posture !== 'awake_running') throw new Error("a hint for a running agent needs a prompt's claim (TRIGGER) first");
        } else {
          await this.toPosture(ctx, event.status as Exclude<Posture, 'awake_running'>);
        }
        const status: AgentStatus = (await h.runtime.getSummary(agentId)).agent.status;
        if (status !== event.status) throw new Error(`the hint is for an agent ${event.status}, the agent is ${status}`);
        const { disposition } = await h.runtime.wake(agentId, { reason: event.hint.reason, source: event.hint.source ?? 'control' });
        const expected = wakeHintDisposition({ status: event.status, queue_depth: event.queueDepth });
        if (disposition !== expected) throw new Error(`the runtime answered ${disposition} to a hint the model classifies ${expected}`);
        return;
      }
      default:
        throw new Error(`no runtime mechanism for ${event.type}`);
    }
  }

  async verify(ctx: ContinuationContext, path: ModelPath, chunk: readonly number[]): Promise<void> {
    const upTo = chunk.at(-1) as number;
    const expected = upTo === INIT ? path.initial.value : (path.steps[upTo] as ModelStep).after.value;
    const read = async (): Promise<unknown> => (await ctx.h.runtime.getSummary(ctx.agentId)).statechart['continuation'];
    // Twice in a row: a refused (rolled back) operation can show a state for a moment.
    await eventually(async () => {
      if (!isDeepStrictEqual(await read(), expected)) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return isDeepStrictEqual(await read(), expected);
    }, `statechart.continuation to be ${JSON.stringify(expected)} (it is ${JSON.stringify(await read())})`);
    // Within a claim the actor passes through `resolving`, which no rest shows: its own states do.
    for (const index of chunk) {
      const step = path.steps[index];
      if (step?.event.type !== 'TRIGGER') continue;
      if (!ctx.h.actors.of('continuation').some((value) => isDeepStrictEqual(value, step.after.value))) {
        throw new Error(`the continuation actor never was ${JSON.stringify(step.after.value)}; it went through ${JSON.stringify(ctx.h.actors.of('continuation'))}`);
      }
    }
  }
}
