import type { Counterexample } from '../render.js';
import { successors } from './actions.js';
import type { Outcome } from './step-context.js';
import { stateViolations, stepViolations, type InvariantId, type Violation } from './invariants.js';
import { AGENTS, INSTANCES, encode, hash53, initialState, phaseOf, projections, statusOf, type Model, type ModelState } from './model.js';

/**
 * Breadth-first, exhaustive exploration of every state the composed system reaches within its
 * bounds, checking the invariants in each state and on each step. States are deduplicated by
 * their canonical encoding; a counterexample is rebuilt from the parent links by replaying the
 * labelled steps from the initial state (steps are deterministic given their label).
 */
export interface ExplorationResult {
  states: number;
  transitions: number;
  /** The longest shortest path to a state. */
  depth: number;
  ms: number;
  /** Machine transitions computed (the rest came from the intern caches). */
  machineCalls: number;
  /** The first violation of each invariant, with its shortest path. */
  violations: Array<{ violation: Violation; path: Counterexample }>;
  /** Stopped early at `maxStates` (the bound was not exhausted). */
  truncated: boolean;
  /** What the explored states include (so a bound is seen not to be vacuous): agent phases, fenced instances, takeovers. */
  seen: Set<string>;
}

export interface ExploreOptions {
  /** Safety net: stop after this many states (reported as truncated). */
  maxStates?: number;
  /** Stop at the first violation of this invariant (fault-injection runs). */
  until?: InvariantId;
  /** Deduplicate whole states (the full product) instead of projections: for the test that compares them. */
  product?: boolean;
  /** Called after each breadth-first level (progress for long runs). */
  onLevel?: (depth: number, states: number, ms: number) => void;
  /** Called with every step explored (the independence check of the projections). */
  onStep?: (before: ModelState, step: Outcome) => void;
}

/** One line per agent and instance: what the state looks like. */
export function describe(model: Model, state: ModelState): string {
  const agents = state.store.map((entry, a) => {
    const name = AGENTS[a];
    if (!entry) return `${name}: -`;
    const d = entry.doc;
    const tasks = d.t.filter((t) => t.m >= 0).map((t) => model.machines.task.path(t.m));
    const procs = (state.procs[a] as number[]).filter((o) => o >= 0).length;
    return `${name}: ${phaseOf(model, d)}/${statusOf(model, d)} m${d.m}${d.snap ? ` rp(m${d.snap.m}${d.snap.intact ? '' : ',corrupt'}${d.snap.schemaOk ? '' : ',old schema'})` : ''}${d.q ? ` q${d.q}` : ''}${tasks.length ? ` tasks[${tasks.join(',')}]` : ''}${procs ? ` procs${procs}` : ''}`;
  });
  const lease = state.lease.h >= 0 ? `lease ${INSTANCES[state.lease.h]}#${state.lease.tok}${state.lease.live ? '' : ' expired'}` : 'no lease';
  const insts = state.inst.map((inst, i) => `${INSTANCES[i]} ${inst.up ? (inst.lost ? 'fenced' : `up#${inst.tok}`) : 'down'}`);
  return [...agents, lease, ...insts].join('; ');
}

export function explore(model: Model, options: ExploreOptions = {}): ExplorationResult {
  const started = performance.now();
  const maxStates = options.maxStates ?? 5_000_000;
  const initial = initialState(model);
  const index = new Set<number>();
  const keysOf = (state: ModelState) => (options.product ? [encode(state)] : projections(state)).map(hash53);
  for (const key of keysOf(initial)) index.add(key);
  const parent: number[] = [-1];
  const via: string[] = [''];
  const depthOf: number[] = [0];
  const violations: ExplorationResult['violations'] = [];
  const seen = new Set<InvariantId>();
  let frontier: ModelState[] = [initial];
  let frontierIds: number[] = [0];
  let transitions = 0;
  let truncated = false;
  const calls = () => model.machines.agent.calls + model.machines.task.calls + model.machines.continuation.calls + model.machines.supervisor.calls;
  const report = (violation: Violation, id: number, last?: string) => {
    if (seen.has(violation.invariant)) return;
    seen.add(violation.invariant);
    violations.push({ violation, path: pathTo(model, id, parent, via, violation, last) });
  };
  for (const v of stateViolations(model, initial)) report(v, 0);
  const features = new Set<string>();
  const note = (state: ModelState) => {
    for (const entry of state.store) if (entry) features.add(`phase:${phaseOf(model, entry.doc)}/${statusOf(model, entry.doc)}`);
    if (state.inst.some((i) => i.up && i.lost)) features.add('an instance fenced');
    if (state.inst.every((i) => i.up && !i.lost)) features.add('both instances up');
    if (state.procs.some((slots) => slots.some((owner) => owner >= 0))) features.add('a process running');
    features.add(`token:${state.lease.tok}`);
  };
  let depth = 0;
  outer: while (frontier.length > 0) {
    const next: ModelState[] = [];
    const nextIds: number[] = [];
    for (let k = 0; k < frontier.length; k++) {
      const state = frontier[k] as ModelState;
      const id = frontierIds[k] as number;
      for (const step of successors(model, state)) {
        transitions += 1;
        options.onStep?.(state, step);
        for (const v of stepViolations(model, state, step)) report(v, id, step.label);
        if (options.until !== undefined && seen.has(options.until)) break outer;
        const keys = keysOf(step.state);
        if (keys.every((key) => index.has(key))) continue;
        for (const key of keys) index.add(key);
        const child = parent.length;
        parent.push(id);
        via.push(step.label);
        depthOf.push(depth + 1);
        for (const v of stateViolations(model, step.state)) report(v, child);
        note(step.state);
        if (options.until !== undefined && seen.has(options.until)) break outer;
        if (parent.length >= maxStates) {
          truncated = true;
          break outer;
        }
        next.push(step.state);
        nextIds.push(child);
      }
    }
    frontier = next;
    frontierIds = nextIds;
    if (next.length > 0) depth += 1;
    options.onLevel?.(depth, parent.length, performance.now() - started);
  }
  return { states: parent.length, transitions, depth, ms: performance.now() - started, machineCalls: calls(), violations, truncated, seen: features };
}

/** The shortest path to state `id` (plus a last step, for a step violation), replayed for its state descriptions. */
function pathTo(model: Model, id: number, parent: number[], via: string[], violation: Violation, last?: string): Counterexample {
  const labels: string[] = [];
  for (let at = id; at > 0; at = parent[at] as number) labels.unshift(via[at] as string);
  if (last) labels.push(last);
  let state = initialState(model);
  const steps = labels.map((label) => {
    const step = successors(model, state).find((s) => s.label === label);
    if (!step) throw new Error(`cannot replay step "${label}"`);
    state = step.state;
    return { event: label, state: describe(model, state) };
  });
  return {
    summary: `invariant ${violation.invariant} violated: ${violation.detail}`,
    initial: describe(model, initialState(model)),
    steps,
    note: violation.detail,
  };
}
