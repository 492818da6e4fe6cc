import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type StateValue } from 'xstate';
// `xstate/graph` (inside xstate 5.33), not the frozen `@xstate/graph` package: only this one has
// `filterEvents`, which drops the self-edges a rejected or allow-listed event would leave.
import { createTestModel, type TestPath } from 'xstate/graph';
import { transitionBranches, toMachineTransition, type MachineTransition } from '../../src/visualize/graph-walk.js';

/** `source|event|branch`: one transition of the definition, in graph-walk's units. */
export type TransitionKey = string;

export function transitionKey(t: Pick<MachineTransition, 'source' | 'event' | 'branch'>): TransitionKey {
  return `${t.source}|${t.event}|${t.branch}`;
}

/** One step of a generated path: the model's snapshots before and after `event`. */
export interface ModelStep {
  event: EventObject;
  before: AnyMachineSnapshot;
  after: AnyMachineSnapshot;
  /** The definition transitions this event takes from `before` (several for parallel regions). */
  fired: TransitionKey[];
}

export interface ModelPath {
  /** Deterministic, unique within the machine: used as the test name. */
  name: string;
  /** How the path was produced. */
  origin: 'shortest' | 'simple' | 'cover' | 'directed';
  initial: AnyMachineSnapshot;
  steps: ModelStep[];
}

export interface AllowListed {
  source: string;
  event: string;
  branch: number;
  /** One line: why no runtime mechanism can produce this transition. */
  reason: string;
}

export interface ModelSpec {
  name: string;
  machine: AnyStateMachine;
  input: unknown;
  /** Every payload event, enumerated: traversal only tries these. */
  events: readonly EventObject[];
  /** Only what guards read: the state value plus the few context fields guards use. */
  serializeState: (snapshot: AnyMachineSnapshot) => string;
  allowList: readonly AllowListed[];
  /** Events the runtime's environment never produces in a state (beyond what the machine rejects). */
  environment?: (snapshot: AnyMachineSnapshot, event: EventObject) => boolean;
  /** Event orders the runtime's environment never produces (a constraint no single state shows). */
  realizable?: (events: readonly EventObject[]) => boolean;
  /** `simple` only where tractable; parallel machines use `shortest`. */
  strategy: 'shortest' | 'simple';
  /**
   * Event sequences run as given (checked against the model step by step): for edges whose runtime
   * precondition a shortest prefix cannot meet. Each entry says why.
   */
  directed?: ReadonlyArray<{ why: string; events: readonly EventObject[] }>;
}

/** Definition transition objects → keys, by identity (XState hands back the same objects). */
function keysByDefinition(machine: AnyStateMachine): Map<unknown, TransitionKey> {
  const out = new Map<unknown, TransitionKey>();
  for (const branch of transitionBranches(machine)) out.set(branch.definition, transitionKey(toMachineTransition(branch)));
  return out;
}

export function firedTransitions(machine: AnyStateMachine, snapshot: AnyMachineSnapshot, event: EventObject, keys = keysByDefinition(machine)): TransitionKey[] {
  return machine.getTransitionData(snapshot, event).map((definition) => {
    const key = keys.get(definition);
    if (!key) throw new Error(`${machine.id}: transition for ${event.type} is not in the definition walk`);
    return key;
  });
}

/** The ids of the active state nodes of a value (root excluded), e.g. `agent.active`, `agent.active.awakeIdle`. */
export function activeStateIds(machineId: string, value: StateValue): string[] {
  const out: string[] = [];
  const visit = (prefix: string, v: StateValue): void => {
    if (typeof v === 'string') {
      out.push(`${prefix}.${v}`);
      return;
    }
    for (const [key, child] of Object.entries(v)) {
      out.push(`${prefix}.${key}`);
      if (child !== undefined) visit(`${prefix}.${key}`, child);
    }
  };
  visit(machineId, value);
  return out;
}

function formatEvent(event: EventObject, labels: ReadonlyMap<EventObject, string>): string {
  return labels.get(event) ?? event.type;
}

/**
 * Short labels for payload variants of one type (`TURN.FINISHED#2`), so test names stay readable
 * and distinct without printing payloads.
 */
function eventLabels(events: readonly EventObject[]): Map<EventObject, string> {
  const byType = new Map<string, EventObject[]>();
  for (const event of events) byType.set(event.type, [...(byType.get(event.type) ?? []), event]);
  const out = new Map<EventObject, string>();
  for (const [type, variants] of byType) variants.forEach((event, i) => out.set(event, variants.length > 1 ? `${type}#${i + 1}` : type));
  return out;
}

function stateLabel(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : `${key}.${stateLabel(child)}`))
    .join('+');
}

/**
 * Builds paths of one model with xstate/graph. `generate()` gives shortest (or simple) paths to
 * every state, plus `spec.directed`, plus one path per definition transition they miss (a shortest
 * prefix to a state where an enumerated event takes it, then that event). Allow-listed transitions
 * are filtered out of the graph, so no path needs them. Paths that are a prefix of another are
 * dropped; the order is deterministic.
 */
export class PathBuilder {
  private readonly keys: Map<unknown, TransitionKey>;
  private readonly allowed: Set<TransitionKey>;
  private readonly labels: Map<EventObject, string>;
  private readonly model;
  private readonly traversal;
  /** Shortest paths to every state (duplicates kept): the prefixes of cover paths. */
  private readonly everyState: ModelPath[];

  constructor(readonly spec: ModelSpec) {
    this.keys = keysByDefinition(spec.machine);
    this.allowed = new Set(spec.allowList.map(transitionKey));
    this.labels = eventLabels(spec.events);
    this.traversal = {
      input: spec.input as never,
      serializeState: (snapshot: unknown) => spec.serializeState(snapshot as AnyMachineSnapshot),
      filterEvents: ((snapshot: AnyMachineSnapshot, event: EventObject) => this.enabled(snapshot, event)) as never,
    };
    this.model = createTestModel(spec.machine, { ...this.traversal, events: spec.events as never });
    this.everyState = this.model.getShortestPaths({ allowDuplicatePaths: true }).map((p) => this.toModelPath(p as TestPath<AnyMachineSnapshot, EventObject>, 'shortest'));
  }

  /**
   * The machine takes it, it is not allow-listed, and the runtime's environment can produce it.
   * (Not `snapshot.can`: that refuses a transition with neither target nor actions, like the
   * isStaleRun branch, which is a transition of the definition all the same.)
   */
  enabled(snapshot: AnyMachineSnapshot, event: EventObject): boolean {
    const fired = firedTransitions(this.spec.machine, snapshot, event, this.keys);
    return fired.length > 0 && !fired.some((key) => this.allowed.has(key)) && (this.spec.environment?.(snapshot, event) ?? true);
  }

  /**
   * The graph identifies states by their serialization, so a path's snapshot objects may be other
   * snapshots with the same serialization (e.g. another `failures` count, which no guard reads).
   * The steps are therefore replayed from the real initial snapshot with XState's pure
   * `transition`, and must serialize as the graph says.
   */
  private toModelPath(path: TestPath<AnyMachineSnapshot, EventObject>, origin: ModelPath['origin']): ModelPath {
    const [first, ...rest] = path.steps;
    if (!first) throw new Error(`${this.spec.name}: a generated path has no steps`);
    const { machine } = this.spec;
    const [initial] = initialTransition(machine, this.spec.input as never) as [AnyMachineSnapshot, unknown];
    const steps: ModelStep[] = [];
    let before = initial;
    for (const step of rest) {
      const fired = firedTransitions(machine, before, step.event, this.keys);
      if (fired.length === 0) throw new Error(`${this.spec.name}: ${step.event.type} takes no transition from ${JSON.stringify(before.value)}`);
      const [after] = transition(machine, before, step.event as never) as [AnyMachineSnapshot, unknown];
      if (this.spec.serializeState(after) !== this.spec.serializeState(step.state)) {
        throw new Error(`${this.spec.name}: replaying ${step.event.type} gives ${this.spec.serializeState(after)}, the graph ${this.spec.serializeState(step.state)}`);
      }
      steps.push({ event: step.event, before, after, fired });
      before = after;
    }
    const events = steps.map((s) => formatEvent(s.event, this.labels));
    const name = `${origin}: ${events.length > 0 ? events.join(' → ') : 'xstate.init'} ⇒ ${stateLabel(before.value)}`;
    return { name, origin, initial, steps };
  }

  /** A path following `events` from the initial state; every event must take a transition. */
  fromEvents(events: readonly EventObject[], origin: ModelPath['origin']): ModelPath {
    const initial = this.everyState[0]?.initial;
    // Not `events` here: getPathsFromEvents takes the path's own events as the traversal's. And an
    // explicit `fromState`: its default is the initial snapshot without `input` (xstate 5.33).
    const [path] = this.model.getPathsFromEvents([...events] as never, { ...this.traversal, fromState: initial as never });
    if (!path) throw new Error(`${this.spec.name}: no path for ${events.map((e) => e.type).join(' → ')}`);
    return this.toModelPath(path as TestPath<AnyMachineSnapshot, EventObject>, origin);
  }

  generate(): ModelPath[] {
    const { spec } = this;
    const base =
      spec.strategy === 'simple'
        ? this.model.getSimplePaths().map((p) => this.toModelPath(p as TestPath<AnyMachineSnapshot, EventObject>, 'simple'))
        : this.model.getShortestPaths().map((p) => this.toModelPath(p as TestPath<AnyMachineSnapshot, EventObject>, 'shortest'));
    const realizable = (path: ModelPath): boolean => spec.realizable?.(path.steps.map((s) => s.event)) ?? true;
    const paths = [...base.filter(realizable), ...(spec.directed ?? []).map((d) => this.fromEvents(d.events, 'directed'))];

    // Prefixes: the shortest path to every state, then every prefix of the paths so far (a state's
    // shortest path may be one the environment cannot produce, while a longer realizable one gets
    // there). Ties between prefixes of the same length go to the smaller serialization, then to
    // the shortest paths; between events, to the earlier one in `spec.events`.
    const covered = new Set(paths.flatMap((p) => p.steps.flatMap((s) => s.fired)));
    const prefixes = [
      ...this.everyState.map((p) => ({ events: p.steps.map((s) => s.event), state: p.steps.at(-1)?.after ?? p.initial })),
      ...paths.flatMap((p) => p.steps.map((step, i) => ({ events: p.steps.slice(0, i + 1).map((s) => s.event), state: step.after }))),
    ].sort((a, b) => a.events.length - b.events.length || spec.serializeState(a.state).localeCompare(spec.serializeState(b.state)));
    for (const transition of transitionBranches(spec.machine).map(toMachineTransition)) {
      const key = transitionKey(transition);
      if (covered.has(key) || this.allowed.has(key)) continue;
      for (const prefix of prefixes) {
        const event = spec.events.find(
          (e) => this.enabled(prefix.state, e) && firedTransitions(spec.machine, prefix.state, e, this.keys).includes(key) && (spec.realizable?.([...prefix.events, e]) ?? true),
        );
        if (!event) continue;
        const path = this.fromEvents([...prefix.events, event], 'cover');
        paths.push(path);
        for (const k of path.steps.flatMap((s) => s.fired)) covered.add(k);
        break;
      }
    }

    // A path whose events are a prefix of another's is executed by the longer one.
    const signature = (p: ModelPath): string[] => p.steps.map((s) => JSON.stringify(s.event));
    const contains = (long: string[], short: string[]): boolean => short.length <= long.length && short.every((e, i) => e === long[i]);
    const kept = paths.filter((p, i) => {
      const sig = signature(p);
      return !paths.some((q, j) => j !== i && contains(signature(q), sig) && (signature(q).length > sig.length || j < i));
    });
    return kept.sort((a, b) => a.name.localeCompare(b.name));
  }
}

export function generatePaths(spec: ModelSpec): ModelPath[] {
  return new PathBuilder(spec).generate();
}
