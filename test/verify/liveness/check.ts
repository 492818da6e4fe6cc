import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type StateValue } from 'xstate';
// `xstate/graph` (inside xstate 5.33), as the model tests: the same adjacency, with filterEvents.
import { getAdjacencyMap } from 'xstate/graph';
import { PathBuilder } from '../../model/paths.js';
import { stateNodes } from '../../../src/visualize/graph-walk.js';
import { eventLabel, type Counterexample, type PathStep } from '../render.js';
import type { EdgeRule, LivenessSpec } from './specs.js';

/** The reachable state graph of one machine over the enumerated events the runtime can send. */
export interface StateGraph {
  spec: LivenessSpec;
  initial: string;
  nodes: Map<string, { snapshot: AnyMachineSnapshot; edges: Array<{ event: EventObject; to: string }> }>;
  /** How each state is first reached from the initial one (breadth first: shortest paths). */
  parent: Map<string, { from: string; event: EventObject } | null>;
  events: readonly EventObject[];
  enabled: (snapshot: AnyMachineSnapshot, event: EventObject) => boolean;
  serialize: (snapshot: AnyMachineSnapshot) => string;
}

export type PropertyName = 'reaches rest' | 'wait edges' | 'stop reachable' | 'no way out of final';

export interface PropertyResult {
  machine: string;
  property: PropertyName;
  holds: boolean;
  /** What was checked, e.g. `11 non-final states`. */
  checked: string;
  counterexamples: Counterexample[];
}

export function buildGraph(spec: LivenessSpec): StateGraph {
  const model = spec.model;
  const events = [...model.events, ...(spec.extraEvents ?? [])];
  const serialize = spec.serializeState ?? model.serializeState;
  // The model tests' notion of an edge: a definition transition fires, it is not allow-listed, and
  // the runtime's environment can send the event there.
  const builder = new PathBuilder(model);
  const enabled = (snapshot: AnyMachineSnapshot, event: EventObject) => builder.enabled(snapshot, event);
  const adjacency = getAdjacencyMap(model.machine, {
    input: model.input as never,
    events: events as never,
    serializeState: ((snapshot: AnyMachineSnapshot) => serialize(snapshot)) as never,
    filterEvents: enabled as never,
  });
  const nodes: StateGraph['nodes'] = new Map();
  for (const [key, entry] of Object.entries(adjacency)) {
    const steps = Object.values(entry.transitions) as Array<{ event: EventObject; state: AnyMachineSnapshot }>;
    const edges = steps.map((t) => ({ event: t.event, to: serialize(t.state) }));
    nodes.set(key, { snapshot: entry.state as AnyMachineSnapshot, edges });
  }
  const [first] = initialTransition(model.machine, model.input as never) as [AnyMachineSnapshot, unknown];
  const initial = serialize(first);
  const parent: StateGraph['parent'] = new Map([[initial, null]]);
  const queue = [initial];
  for (let i = 0; i < queue.length; i++) {
    const from = queue[i] as string;
    for (const edge of nodes.get(from)?.edges ?? []) {
      if (parent.has(edge.to)) continue;
      parent.set(edge.to, { from, event: edge.event });
      queue.push(edge.to);
    }
  }
  return { spec, initial, nodes, parent, events, enabled, serialize };
}

export function valueLabel(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : typeof child === 'string' ? `${key}.${child}` : `${key}.(${valueLabel(child)})`))
    .join(' + ');
}

function label(graph: StateGraph, key: string): string {
  const node = graph.nodes.get(key);
  if (!node) return key;
  const wait = (node.snapshot.context as { wait?: { kind: string; workItemId: string | null } | null }).wait;
  return valueLabel(node.snapshot.value) + (wait ? ` [${wait.kind} wait${wait.workItemId ? ', work item' : ''}]` : '');
}

/** The shortest path from the initial state to `key`, ending in `note`. */
function pathTo(graph: StateGraph, key: string, summary: string, note: string, extra: PathStep[] = []): Counterexample {
  const steps: PathStep[] = [];
  for (let at = graph.parent.get(key), to = key; at; to = at.from, at = graph.parent.get(at.from)) {
    steps.unshift({ event: eventLabel(at.event), state: label(graph, to) });
  }
  return { summary, initial: label(graph, graph.initial), steps: [...steps, ...extra], note };
}

/** The states from which some state in `targets` can be reached (targets included). */
function canReach(graph: StateGraph, targets: ReadonlySet<string>): Set<string> {
  const into = new Map<string, string[]>();
  for (const [from, node] of graph.nodes) for (const edge of node.edges) into.set(edge.to, [...(into.get(edge.to) ?? []), from]);
  const reached = new Set(targets);
  const queue = [...targets];
  while (queue.length > 0) {
    for (const from of into.get(queue.pop() as string) ?? []) {
      if (reached.has(from)) continue;
      reached.add(from);
      queue.push(from);
    }
  }
  return reached;
}

/** Reachable states in breadth-first order (so the first counterexample has the shortest path). */
function inOrder(graph: StateGraph): string[] {
  return [...graph.parent.keys()];
}

const isFinal = (snapshot: AnyMachineSnapshot) => snapshot.status === 'done';

function checkReachability(graph: StateGraph, property: PropertyName, goal: Set<string>, goalLabel: string): PropertyResult {
  const reach = canReach(graph, goal);
  const nonFinal = inOrder(graph).filter((key) => !isFinal((graph.nodes.get(key) as { snapshot: AnyMachineSnapshot }).snapshot));
  const stuck = nonFinal.filter((key) => !reach.has(key));
  return {
    machine: graph.spec.name,
    property,
    holds: stuck.length === 0,
    checked: `${nonFinal.length} non-final states`,
    counterexamples: stuck.map((key) => {
      const from = canReach({ ...graph, nodes: reverse(graph) }, new Set([key]));
      const seen = [...from].filter((k) => k !== key).map((k) => label(graph, k));
      return pathTo(graph, key, `${goalLabel} is unreachable from ${label(graph, key)}`, `from here only ${seen.length > 0 ? seen.join(', ') : 'this state itself'} can be reached`);
    }),
  };
}

/** The graph with its edges reversed (so `canReach` on it gives what a state reaches). */
function reverse(graph: StateGraph): StateGraph['nodes'] {
  const out: StateGraph['nodes'] = new Map();
  for (const [key, node] of graph.nodes) out.set(key, { snapshot: node.snapshot, edges: [] });
  for (const [from, node] of graph.nodes) for (const edge of node.edges) out.get(edge.to)?.edges.push({ event: edge.event, to: from });
  return out;
}

export function reachesRest(graph: StateGraph): PropertyResult {
  const rest = new Set([...graph.nodes].filter(([, n]) => graph.spec.rest.holds(n.snapshot)).map(([k]) => k));
  return checkReachability(graph, 'reaches rest', rest, `a rest state (${graph.spec.rest.label})`);
}

export function stopReachable(graph: StateGraph): PropertyResult | null {
  const goal = graph.spec.alwaysReachable;
  if (!goal) return null;
  const accepting = new Set(
    [...graph.nodes]
      .filter(([, n]) => goal.orIn.holds(n.snapshot) || graph.events.some((e) => e.type === goal.accepts && graph.enabled(n.snapshot, e)))
      .map(([k]) => k),
  );
  return checkReachability(graph, 'stop reachable', accepting, `a state accepting ${goal.accepts}`);
}

/** The snapshot `event` leads to, when it is an edge of the graph there. */
function follow(graph: StateGraph, snapshot: AnyMachineSnapshot, event: EventObject): AnyMachineSnapshot | null {
  if (!graph.enabled(snapshot, event)) return null;
  const [next] = transition(graph.spec.model.machine, snapshot, event as never) as [AnyMachineSnapshot, unknown];
  return next;
}

function hasEdge(graph: StateGraph, snapshot: AnyMachineSnapshot, rule: EdgeRule): PathStep[] | null {
  for (const event of graph.events) {
    if (event.type !== rule.event || !(rule.pick?.(event) ?? true)) continue;
    const next = follow(graph, snapshot, event);
    if (!next || !rule.to.holds(next)) continue;
    const step = { event: eventLabel(event), state: valueLabel(next.value) };
    if (!rule.then) return [step];
    const then = rule.then;
    for (const second of graph.events) {
      if (second.type !== then.event) continue;
      const last = follow(graph, next, second);
      if (last && then.to.holds(last)) return [step, { event: eventLabel(second), state: valueLabel(last.value) }];
    }
  }
  return null;
}

export function waitEdges(graph: StateGraph): PropertyResult {
  const counterexamples: Counterexample[] = [];
  let pairs = 0;
  for (const waiting of graph.spec.waiting) {
    const holding = inOrder(graph).filter((key) => waiting.holds((graph.nodes.get(key) as { snapshot: AnyMachineSnapshot }).snapshot));
    if (holding.length === 0) {
      counterexamples.push({ summary: `${waiting.label} is never reached`, initial: label(graph, graph.initial), steps: [], note: 'the waiting state the seeds describe cannot be entered with the events the runtime sends' });
      continue;
    }
    for (const key of holding) {
      const { snapshot } = graph.nodes.get(key) as { snapshot: AnyMachineSnapshot };
      for (const rule of waiting.edges) {
        pairs += 1;
        if (hasEdge(graph, snapshot, rule)) continue;
        const target = rule.then ? `${rule.to.label}, then ${rule.then.event} → ${rule.then.to.label}` : rule.to.label;
        counterexamples.push(
          pathTo(graph, key, `${waiting.label} has no ${rule.role} edge ${rule.event} → ${target}`, `no enumerated ${rule.event} takes ${label(graph, key)} to ${target} (seed ${rule.seed})`),
        );
      }
    }
  }
  return { machine: graph.spec.name, property: 'wait edges', holds: counterexamples.length === 0, checked: `${graph.spec.waiting.length} waiting states, ${pairs} state × edge pairs`, counterexamples };
}

/** Every event type the machine's definition names, for the definition-level check of final states. */
function definedEventTypes(machine: AnyStateMachine): string[] {
  return [...new Set(stateNodes(machine).flatMap((node) => [...node.transitions.keys()]))];
}

export function noWayOutOfFinal(graph: StateGraph, required: readonly string[] = []): PropertyResult {
  const machine = graph.spec.model.machine;
  const counterexamples: Counterexample[] = [];
  const finals = stateNodes(machine).filter((node) => node.type === 'final');
  for (const id of required) {
    const node = stateNodes(machine).find((n) => n.key === id);
    if (!node || node.type !== 'final') {
      counterexamples.push({ summary: `${id} is not a final state`, initial: label(graph, graph.initial), steps: [], note: `${id} must be final: nothing may follow it` });
    }
  }
  for (const node of finals) {
    const declared = [...node.transitions.keys(), ...(node.always ? ['(always)'] : [])];
    if (declared.length > 0) {
      counterexamples.push({ summary: `${node.id} declares transitions: ${declared.join(', ')}`, initial: label(graph, graph.initial), steps: [], note: 'a final state must declare no way out' });
    }
  }
  const types = definedEventTypes(machine);
  const probes = [...graph.events, ...types.filter((t) => !graph.events.some((e) => e.type === t)).map((type) => ({ type }))];
  let finalStates = 0;
  for (const key of inOrder(graph)) {
    const { snapshot, edges } = graph.nodes.get(key) as { snapshot: AnyMachineSnapshot; edges: Array<{ event: EventObject; to: string }> };
    if (!isFinal(snapshot)) continue;
    finalStates += 1;
    const escape = edges.find((e) => e.to !== key);
    if (escape) counterexamples.push(pathTo(graph, key, `${label(graph, key)} has a way out: ${escape.event.type}`, `${escape.event.type} leaves a final state`));
    // A transition with a target is a way out; the root's targetless handlers (task.finished's
    // stopChild) are not, and a done actor runs none of them anyway.
    const taken = probes.filter((event) => machine.getTransitionData(snapshot, event as never).some((t) => (t.target?.length ?? 0) > 0));
    if (taken.length > 0) counterexamples.push(pathTo(graph, key, `${label(graph, key)} has a way out on ${taken.map((e) => e.type).join(', ')}`, 'a final state leads elsewhere'));
  }
  return {
    machine: graph.spec.name,
    property: 'no way out of final',
    holds: counterexamples.length === 0,
    checked: `${finals.length} final state nodes, ${finalStates} reached, ${probes.length} event probes`,
    counterexamples,
  };
}

/** Every property of one machine, over one graph. */
export function checkLiveness(spec: LivenessSpec): { graph: StateGraph; results: PropertyResult[] } {
  const graph = buildGraph(spec);
  const results = [reachesRest(graph), waitEdges(graph), stopReachable(graph), noWayOutOfFinal(graph, spec.name === 'agent' ? ['terminated'] : [])];
  return { graph, results: results.filter((r): r is PropertyResult => r !== null) };
}
