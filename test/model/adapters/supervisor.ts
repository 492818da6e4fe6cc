import { isDeepStrictEqual } from 'node:util';
import type { Actor } from 'xstate';
import type { supervisorMachine, SupervisorContext, SupervisorEvent } from '../../../machines/index.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { SHARD_INPUT } from '../models.js';
import { transitionKey, type ModelPath, type ModelStep } from '../paths.js';
import { eventAt, INIT, type Driver } from './executor.js';
import { eventually, Harness } from './harness.js';
import { dropMachineContext } from './snapshot-files.js';
import { hasId, idsOf } from '../../../machines/id-set.js';

type Shard = Actor<typeof supervisorMachine>;

/** What the supervisor model and the shard actor are compared on (agents by their model id). */
interface ShardView {
  value: unknown;
  agents: string[];
  live: number;
  failures: number;
}

/**
 * The runtime has no API that shows its supervisor shards, so this reads the private `shards`
 * list of its ShardPool (observation only: the paths drive the runtime through its API). A view of the shards
 * (e.g. in `readiness()` or `actorTree`) would replace this.
 */
function shardsOf(runtime: Runtime): Shard[] {
  const pool: unknown = Reflect.get(runtime, 'shards');
  const shards: unknown = typeof pool === 'object' && pool !== null ? Reflect.get(pool, 'shards') : undefined;
  if (!Array.isArray(shards)) throw new Error('Runtime has no `shards` array any more: update the supervisor probe');
  return shards as Shard[];
}

function viewOf(value: unknown, context: Pick<SupervisorContext, 'agents' | 'live' | 'failures'>, modelId: (agentId: string) => string = (id) => id): ShardView {
  return { value, agents: idsOf(context.agents).map(modelId).sort(), live: context.live, failures: context.failures };
}

export interface SupervisorContextState {
  h: Harness;
  /** The runtime agent standing for each agent id of the model. */
  agents: Map<string, string>;
  /** An agent prepared on disk with its actor context removed: the model's failing `agent-1`. */
  broken: string | null;
  /** Every distinct state the shard went through, from its creation. */
  history: ShardView[];
  /** Runtime agents the shard refused (`agent.refused`), in order. */
  refused: string[];
  /** A SHUTDOWN step closed the runtime. */
  closed: boolean;
}

let agents = 0;

/** The refusing branch of AGENT.ATTACHED (hasCapacity failed). */
const REFUSED = transitionKey({ source: 'supervisor.running', event: 'AGENT.ATTACHED', branch: 1 });

/** The model's agent that fails (models.ts enumerates AGENT.FAILED for it only). */
const FAILING_AGENT = 'agent-1';

function nextAgentId(): string {
  agents += 1;
  return `model-sup-agent-${process.pid}-${agents}`;
}

/**
 * Supervisor paths: the runtime's shard actor, fed by the runtime itself. AGENT.ATTACHED is a new
 * live agent actor (createAgent), AGENT.DETACHED one that goes to sleep (its actor is stopped),
 * AGENT.FAILED an agent actor that throws (its persisted context was removed on disk, so its next
 * effect request fails inside XState), SHUTDOWN `Runtime.close()`. Agents are kept attached by a
 * turn nobody runs: an agent whose turns an external worker runs (`http_worker`) holds its live
 * actor in `awake_running` until the turn ends. The runtime opens its shards with the model's
 * capacity, so a refused agent goes to a second shard.
 */
export class SupervisorDriver implements Driver<SupervisorContextState> {
  readonly machine = 'supervisor' as const;

  automatic(path: ModelPath, index: number): boolean {
    // The shard is created by the first attach; a broken agent fails right after it attaches;
    // Runtime.close() (SHUTDOWN) detaches every agent and then sends DRAINED.
    return index === 0 || eventAt(path, index).type === 'AGENT.FAILED' || path.steps[index]?.before.value === 'draining';
  }

  async setup(path: ModelPath): Promise<SupervisorContextState> {
    const h = await Harness.open({ killGraceMs: 1_000, leaseTtlMs: 3_000, shardCapacity: SHARD_INPUT.capacity });
    const ctx: SupervisorContextState = { h, agents: new Map(), broken: null, history: [], refused: [], closed: false };
    if (path.steps.some((s) => s.event.type === 'AGENT.FAILED')) {
      const agentId = nextAgentId();
      await h.runtime.createAgent({ agent_id: agentId, config: { turn_runner: 'scripted', model: 'scripted' } });
      await eventually(async () => (await h.runtime.getSummary(agentId)).agent.status === 'asleep', 'the prepared agent to sleep');
      // A fresh runtime, so the shard under test starts with the path.
      await h.reopen({ agentId, change: dropMachineContext });
      ctx.broken = agentId;
    }
    this.watch(ctx);
    return ctx;
  }

  /**
   * The runtime keeps serving after the path: a timer still fires and the agents still answer.
   * (When an agent actor throws on every event, the runtime's recovery retries it forever without
   * yielding, and neither happens; the path runs in a child process for that reason.)
   */
  async settled(ctx: SupervisorContextState): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 250));
    if (ctx.closed) return;
    for (const agentId of ctx.agents.values()) await ctx.h.runtime.getSummary(agentId);
  }

  async dispose(ctx: SupervisorContextState): Promise<void> {
    await ctx.h.dispose();
  }

  /**
   * Records every distinct state of the first shard (the model's) from its creation on, and the
   * agents it refuses: shards are created lazily, inside an attach, so the probe wraps the `push`
   * of the runtime's private shard list.
   */
  private watch(ctx: SupervisorContextState): void {
    const shards = shardsOf(ctx.h.runtime);
    const push = shards.push.bind(shards);
    const modelId = (agentId: string): string => [...ctx.agents].find(([, id]) => id === agentId)?.[0] ?? agentId;
    const record = (snapshot: ReturnType<Shard['getSnapshot']>): void => {
      const view = viewOf(snapshot.value, snapshot.context, modelId);
      if (!isDeepStrictEqual(ctx.history.at(-1), view)) ctx.history.push(view);
    };
    Object.defineProperty(shards, 'push', {
      value: (...added: Shard[]): number => {
        for (const shard of added) {
          if (shard.getSnapshot().context.shardId !== SHARD_INPUT.shardId) continue;
          record(shard.getSnapshot());
          shard.subscribe({ next: record, error: () => undefined });
          shard.on('agent.refused', (event) => ctx.refused.push(event.agentId));
        }
        return push(...added);
      },
    });
  }

  /**
   * The model's `modelId` attaches: the broken agent is restored by a wake hint (and then fails);
   * any other is a new agent prompted before the scheduler could put it to sleep: its turn waits
   * for a worker that never comes, so its actor stays.
   */
  private async attach(ctx: SupervisorContextState, modelId: string): Promise<void> {
    const { h } = ctx;
    if (modelId === FAILING_AGENT && ctx.broken) {
      ctx.agents.set(modelId, ctx.broken);
      await h.runtime.wake(ctx.broken, { reason: 'probe' });
      return;
    }
    const agentId = nextAgentId();
    ctx.agents.set(modelId, agentId);
    await h.runtime.createAgent({ agent_id: agentId, config: { turn_runner: 'http_worker', model: 'external' } });
    // No await in between: the scheduler's first look at the agent finds the prompt queued.
    await h.runtime.prompt(agentId, { text: 'hold the actor' });
  }

  async run(ctx: SupervisorContextState, path: ModelPath, chunk: readonly number[]): Promise<void> {
    const index = chunk[0] as number;
    // The shard is created by the first attach: the init step is the first ATTACHED's call.
    const step = path.steps[index === INIT ? 0 : index] as ModelStep;
    const event = step.event as SupervisorEvent;
    switch (event.type) {
      case 'AGENT.ATTACHED':
        return this.attach(ctx, event.agentId);
      case 'AGENT.DETACHED': {
        // Its run aborted, the agent has nothing to do: it sleeps and its actor is stopped.
        const agentId = ctx.agents.get(event.agentId);
        if (!agentId) throw new Error(`AGENT.DETACHED needs ${event.agentId} attached`);
        await eventually(async () => (await ctx.h.runtime.getSummary(agentId)).agent.current_run_id !== null, `${agentId}'s turn to start`);
        await ctx.h.runtime.abortRun(agentId, {});
        return;
      }
      case 'SHUTDOWN':
        ctx.closed = true;
        return ctx.h.runtime.close();
      default:
        throw new Error(`no runtime mechanism for ${event.type}`);
    }
  }

  async verify(ctx: SupervisorContextState, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void> {
    const upTo = chunk.at(-1) as number;
    // Distinct in a row, like the history: a refused attach keeps the shard's view.
    const expected = [path.initial, ...path.steps.slice(0, upTo + 1).map((s) => s.after)]
      .map((snapshot) => viewOf(snapshot.value, snapshot.context as SupervisorContext))
      .filter((view, i, views) => i === 0 || !isDeepStrictEqual(view, views[i - 1]));
    // The shard's states, in order, contain the model's; mid-path it must rest in the last one.
    const follows = (): boolean => {
      let at = 0;
      for (const view of ctx.history) if (at < expected.length && isDeepStrictEqual(view, expected[at])) at += 1;
      return at === expected.length && (last || isDeepStrictEqual(ctx.history.at(-1), expected.at(-1)));
    };
    await eventually(() => follows(), `the shard to go through ${JSON.stringify(expected)}; it went through ${JSON.stringify(ctx.history)}`);
    // A refused attach leaves the shard as it was: the agent is refused here and held by another shard.
    for (const index of chunk) {
      const step = path.steps[index];
      const event = step?.event as SupervisorEvent | undefined;
      if (!step?.fired.includes(REFUSED) || event?.type !== 'AGENT.ATTACHED') continue;
      const agentId = ctx.agents.get(event.agentId) as string;
      const elsewhere = shardsOf(ctx.h.runtime).some((shard) => shard.getSnapshot().context.shardId !== SHARD_INPUT.shardId && hasId(shard.getSnapshot().context.agents, agentId));
      if (!ctx.refused.includes(agentId) || !elsewhere) throw new Error(`${agentId} was not refused by the full shard and attached to another (refused: ${JSON.stringify(ctx.refused)})`);
    }
  }
}
