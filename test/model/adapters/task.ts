import { isDeepStrictEqual } from 'node:util';
import type { TaskEvent } from '../../../machines/index.js';
import type { AgentEvent } from '../../../src/domain/index.js';
import type { ModelPath, ModelStep } from '../paths.js';
import { eventAt, INIT, type Driver } from './executor.js';
import { isInjectedFault } from './gate-store.js';
import { commandStarted, controlledCommand, eventually, Harness, releaseCommand } from './harness.js';

const FINAL = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
/** A command timeout short enough for a path to wait out, long enough to see `running` first. */
const TIMEOUT_MS = 400;

export interface TaskContext {
  h: Harness;
  agentId: string;
  taskId: string | null;
  dir: string;
  /** The agent's current state path, as the gate holds it. */
  agentState: string;
}

let agents = 0;

function stepAt(path: ModelPath, index: number): ModelStep {
  return path.steps[index] as ModelStep;
}

/** What the runtime reports per task: `task_status_changed` statuses, and `task_input` for INPUT. */
function traceOf(events: AgentEvent[], taskId: string): string[] {
  return events
    .filter((e) => e.payload['task_id'] === taskId && (e.type === 'task_status_changed' || e.type === 'task_input'))
    .map((e) => (e.type === 'task_input' ? 'input' : String(e.payload['status'])));
}

/** The trace entry a model step leaves: its target status; a force stop reports `cancelling` again. */
function expectedTrace(step: ModelStep): string {
  return step.event.type === 'INPUT' ? 'input' : String(step.after.value);
}

/**
 * Task paths: one command task of a held-awake agent, started with `execCommand` and driven with
 * `stopTask`, `taskInput`, the agent's `control stop` (INTERRUPT) and the command's own exit,
 * timeout or failure to start. The command waits for a control file, so the path decides when and
 * how it exits (harness.ts `controlledCommand`).
 */
export class TaskDriver implements Driver<TaskContext> {
  readonly machine = 'task' as const;

  automatic(path: ModelPath, index: number): boolean {
    const type = eventAt(path, index).type as TaskEvent['type'];
    // From `queued` the runtime launches at once: STOP and INTERRUPT must come in the same breath.
    if (index === 0) return true;
    if (type === 'TIMED_OUT') return true;
    // After a force stop the process is killed and the runtime reports its exit by itself.
    const previous = path.steps[index - 1];
    return type === 'EXITED' && previous?.event.type === 'STOP' && previous.before.value === 'cancelling';
  }

  async setup(): Promise<TaskContext> {
    // A long kill grace keeps a stopped command that ignores SIGTERM in `cancelling`.
    const h = await Harness.open({ killGraceMs: 10_000, leaseTtlMs: 3_000 });
    agents += 1;
    const agentId = `model-task-agent-${process.pid}-${agents}`;
    h.gate.expect(agentId, [{ from: 'created', to: 'initializing' }, { from: 'initializing', to: 'active.awakeIdle' }], 'hold');
    await h.runtime.createAgent({ agent_id: agentId, config: { turn_runner: 'scripted', model: 'scripted' } });
    await eventually(async () => h.gate.pending(agentId).length === 0, 'the agent to initialize');
    return { h, agentId, taskId: null, dir: await h.controlDir('task'), agentState: 'active.awakeIdle' };
  }

  async dispose(ctx: TaskContext): Promise<void> {
    await ctx.h.dispose();
  }

  async run(ctx: TaskContext, path: ModelPath, chunk: readonly number[]): Promise<void> {
    const first = chunk[0] as number;
    const { h, agentId } = ctx;
    if (first === INIT) {
      const types = path.steps.map((s) => s.event.type);
      const task = await h.runtime.execCommand(agentId, {
        cmd: controlledCommand(ctx.dir, { ignoreTerm: path.steps.some((s) => s.event.type === 'STOP' && s.before.value === 'running') }),
        summary: 'model path task',
        accepts_input: true,
        ...(types[0] === 'SPAWN_FAILED' ? { workdir: `${ctx.dir}/does-not-exist` } : {}),
        ...(types.includes('TIMED_OUT') ? { timeout_ms: TIMEOUT_MS } : {}),
      });
      ctx.taskId = task.id;
      // No await between the create and these: the launch waits for the next event-loop turn.
      if (types[0] === 'STOP') await h.runtime.stopTask(agentId, task.id);
      if (types[0] === 'INTERRUPT') await this.stopAgent(ctx);
      return;
    }
    const step = stepAt(path, first);
    const taskId = ctx.taskId as string;
    const event = step.event as TaskEvent;
    switch (event.type) {
      case 'EXITED':
        return releaseCommand(ctx.dir, event.exitCode);
      case 'STOP':
        await h.runtime.stopTask(agentId, taskId);
        return;
      case 'INTERRUPT':
        return this.stopAgent(ctx);
      case 'INPUT':
        await h.runtime.taskInput(agentId, taskId, { text: 'more input\n' });
        return;
      default:
        throw new Error(`no runtime mechanism for ${event.type} from ${JSON.stringify(step.before.value)}`);
    }
  }

  /** INTERRUPT: stopping the agent interrupts its tasks. */
  private async stopAgent(ctx: TaskContext): Promise<void> {
    ctx.h.gate.expect(ctx.agentId, [{ from: ctx.agentState, to: 'stopped' }], 'hold');
    ctx.agentState = 'stopped';
    try {
      await ctx.h.runtime.control(ctx.agentId, { action: 'stop' });
    } catch (error) {
      if (!isInjectedFault(error)) throw error;
      throw new Error(`the agent did not stop: ${JSON.stringify(ctx.h.gate.refusalsOf(ctx.agentId).at(-1))}`);
    }
  }

  async verify(ctx: TaskContext, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void> {
    const taskId = ctx.taskId as string;
    const upTo = chunk.at(-1) as number;
    const expected = ['queued', ...path.steps.slice(0, upTo + 1).map(expectedTrace)];
    const trace = async (): Promise<string[]> => traceOf((await ctx.h.runtime.eventsPage(ctx.agentId, { limit: 512, order: 'asc' })).events, taskId);
    // The runtime's own trace of the task, step by step (a later step may follow at the end of the path).
    const seen = await eventually(async () => {
      const t = await trace();
      return t.length >= expected.length ? t : undefined;
    }, `the runtime to report ${JSON.stringify(expected)} for ${taskId}; it reported ${JSON.stringify(await trace())}`);
    if (!isDeepStrictEqual(last ? seen.slice(0, expected.length) : seen, expected)) {
      throw new Error(`the runtime reported ${JSON.stringify(seen)} for the task, the model takes ${JSON.stringify(expected)}`);
    }
    // The task actor's own states, from the runtime's inspection events: the same sequence.
    // (A force stop reports `cancelling` again; the actor stays there, which is no new state.)
    const states: string[] = [];
    for (const status of expected) if (status !== 'input' && states.at(-1) !== status) states.push(status);
    const actorStates = (): string[] => ctx.h.actors.of(taskId).map(String);
    await eventually(() => {
      const seen = actorStates();
      return seen.length >= states.length && isDeepStrictEqual(seen.slice(0, states.length), states) && (last || seen.length === states.length);
    }, `the task actor to go through ${JSON.stringify(states)}; it went through ${JSON.stringify(actorStates())}`);
    const value = String(upTo === INIT ? path.initial.value : stepAt(path, upTo).after.value);
    const settled = FINAL.has(value);
    if (last && !settled) return;
    // Live while the task runs; in a final state it sends task.finished and the agent stops it.
    await eventually(async () => {
      const chart = (await ctx.h.runtime.getSummary(ctx.agentId)).statechart;
      // `running` also waits for the command itself: a signal before its trap is set would kill it.
      if (!settled) return chart[taskId] === value && (value !== 'running' || (await commandStarted(ctx.dir)));
      return !(taskId in chart) && (await ctx.h.runtime.getTask(ctx.agentId, taskId)).status === value;
    }, settled ? `task ${taskId} to end ${value} and leave the agent actor` : `statechart.${taskId} to be ${value}`);
  }
}
