import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type StateValue } from 'xstate';
import { agentMachine, continuationMachine, supervisorMachine, taskMachine, type AgentEffect, type AgentStateMeta } from '../../../machines/index.js';
import type { AgentStatus, LifecyclePhase, SchedulerFacts } from '../../../src/domain/index.js';
import { statePath } from '../../../src/runtime/agent/tx.js';

/**
 * The real machines, stepped with XState's pure `transition` and interned: a model state holds a
 * small number per machine snapshot, and each (snapshot, event) pair is computed once. A snapshot
 * is kept as its value and context; counters that only name idempotency keys (`epoch`) are left
 * out, so the state space stays finite.
 */
export interface Step {
  /** The interned snapshot after the event. */
  id: number;
  /** The state value changed (the runtime records a TransitionRecord then). */
  moved: boolean;
  /** Some transition fired (targetless ones included): the event was taken. */
  taken: boolean;
  /** Lifecycle effects the step requested (`effect.requested`, agent only). */
  effects: AgentEffect[];
}

export class InternedMachine {
  private readonly ids = new Map<string, number>();
  private readonly snapshots: AnyMachineSnapshot[] = [];
  private readonly steps = new Map<string, Step>();
  calls = 0;

  constructor(
    readonly machine: AnyStateMachine,
    private readonly normalize: (context: Record<string, unknown>) => Record<string, unknown> = (c) => c,
  ) {}

  private intern(snapshot: AnyMachineSnapshot): number {
    const context = this.normalize(snapshot.context as Record<string, unknown>);
    const key = JSON.stringify([snapshot.value, context]);
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.snapshots.length;
      this.ids.set(key, id);
      // Resolved from value and context alone (no children: the model keeps those itself).
      this.snapshots.push(this.machine.resolveState({ value: snapshot.value, context }) as AnyMachineSnapshot);
    }
    return id;
  }

  private readonly initials = new Map<string, number>();

  initial(input: unknown): number {
    const key = JSON.stringify(input);
    let id = this.initials.get(key);
    if (id === undefined) {
      const [snapshot] = initialTransition(this.machine, input as never) as [AnyMachineSnapshot, unknown];
      id = this.intern(snapshot);
      this.initials.set(key, id);
    }
    return id;
  }

  snapshot(id: number): AnyMachineSnapshot {
    const snapshot = this.snapshots[id];
    if (!snapshot) throw new Error(`${this.machine.id}: no interned snapshot ${id}`);
    return snapshot;
  }

  value(id: number): StateValue {
    return this.snapshot(id).value;
  }

  path(id: number): string {
    return statePath(this.value(id));
  }

  done(id: number): boolean {
    return this.snapshot(id).status === 'done';
  }

  step(id: number, event: EventObject & Record<string, unknown>): Step {
    const key = `${id}|${eventKey(event)}`;
    const cached = this.steps.get(key);
    if (cached) return cached;
    this.calls += 1;
    const before = this.snapshot(id);
    const taken = before.status === 'active' && this.machine.getTransitionData(before, event as never).length > 0;
    const [after, actions] = transition(this.machine, before, event as never) as [AnyMachineSnapshot, Array<{ type: string; params?: { event?: { type: string; effect?: AgentEffect } } }>];
    const effects = actions.flatMap((a) => (a.type === 'xstate.emit' && a.params?.event?.type === 'effect.requested' && a.params.event.effect ? [a.params.event.effect] : []));
    const next = this.intern(after);
    const step = { id: next, moved: JSON.stringify(after.value) !== JSON.stringify(before.value), taken, effects };
    this.steps.set(key, step);
    return step;
  }
}

/**
 * The cache key of an event: its JSON, with scheduler facts reduced to the fields the model's
 * facts can differ in (`factsOf` in model.ts builds every other field from `emptyFacts`).
 */
function eventKey(event: EventObject & Record<string, unknown>): string {
  const facts = event['facts'] as SchedulerFacts | undefined;
  if (!facts) return JSON.stringify(event);
  const { facts: _facts, ...rest } = event;
  return `${JSON.stringify(rest)}|${facts.status}|${facts.current_run_id}|${facts.queue.queued}|${facts.tasks.map((t) => t.status).join(',')}`;
}

/** The machines one model runs: the real ones, or copies a fault variant edited. */
export interface ModelMachines {
  agent: InternedMachine;
  task: InternedMachine;
  continuation: InternedMachine;
  supervisor: InternedMachine;
}

export function modelMachines(overrides: Partial<Record<keyof ModelMachines, AnyStateMachine>> = {}): ModelMachines {
  return {
    // `epoch` only numbers idempotency keys; `failure` and `refusal` are what the runtime copies
    // into the document for operators: no guard reads them.
    agent: new InternedMachine(overrides.agent ?? agentMachine, (c) => ({ ...c, epoch: 0, failure: null, refusal: null })),
    task: new InternedMachine(overrides.task ?? taskMachine),
    continuation: new InternedMachine(overrides.continuation ?? continuationMachine),
    supervisor: new InternedMachine(overrides.supervisor ?? supervisorMachine),
  };
}

/** The (phase, status) labels of an agent snapshot, as `agentLabels` reads them from the state meta. */
const labels = new WeakMap<InternedMachine, Array<{ phase: LifecyclePhase; status: AgentStatus }>>();

export function agentPhase(machines: ModelMachines, id: number): { phase: LifecyclePhase; status: AgentStatus } {
  let known = labels.get(machines.agent);
  if (!known) labels.set(machines.agent, (known = []));
  const cached = known[id];
  if (cached) return cached;
  const snapshot = machines.agent.snapshot(id);
  const metas = Object.values(snapshot.getMeta()) as AgentStateMeta[];
  const leaf = metas[metas.length - 1];
  if (!leaf) throw new Error(`agent state ${machines.agent.path(id)} has no labels`);
  const context = snapshot.context as { statusBeforeRecovery: AgentStatus };
  const result = { phase: leaf.phase, status: leaf.status ?? context.statusBeforeRecovery };
  known[id] = result;
  return result;
}
