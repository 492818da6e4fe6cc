import { createMachine, type AnyStateMachine } from 'xstate';

/**
 * Copies of real machines with one edit, for fault injection: the checkers must find the edit.
 * The config is copied deeply (functions kept), edited, and built again with the original's
 * implementations (guards, actions, actors), so the copy differs from the original only there.
 */
export type ConfigNode = {
  on?: Record<string, unknown>;
  states?: Record<string, ConfigNode>;
  [key: string]: unknown;
};

function copy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copy) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)])) as T;
  }
  return value;
}

export function editMachine(machine: AnyStateMachine, edit: (root: ConfigNode) => void): AnyStateMachine {
  const config = copy(machine.config) as ConfigNode;
  edit(config);
  return createMachine(config as never, machine.implementations as never) as AnyStateMachine;
}

/** The config node at a dotted path of state keys (`active.awakeRunning`); `''` is the root. */
export function nodeAt(root: ConfigNode, path: string): ConfigNode {
  let node = root;
  for (const key of path ? path.split('.') : []) {
    const next = node.states?.[key];
    if (!next) throw new Error(`no state ${path} in the machine config`);
    node = next;
  }
  return node;
}

/** A copy without the `event` transitions of the state at `path`. */
export function withoutTransition(machine: AnyStateMachine, path: string, event: string): AnyStateMachine {
  return editMachine(machine, (root) => {
    const node = nodeAt(root, path);
    if (!node.on || !(event in node.on)) throw new Error(`${path} has no ${event} transition`);
    delete node.on[event];
  });
}

/** A copy whose `branch`-th `event` transition of the state at `path` has no guard any more. */
export function withoutGuard(machine: AnyStateMachine, path: string, event: string, branch = 0): AnyStateMachine {
  return editMachine(machine, (root) => {
    const node = nodeAt(root, path);
    const raw = node.on?.[event];
    const branches = (Array.isArray(raw) ? raw : [raw]) as Array<Record<string, unknown> | undefined>;
    const target = branches[branch];
    if (!target || !('guard' in target)) throw new Error(`${path} ${event}#${branch} has no guard`);
    delete target['guard'];
  });
}

/** A copy whose top-level state `from` is called `to`, every transition into it retargeted. */
export function withStateRenamed(machine: AnyStateMachine, from: string, to: string): AnyStateMachine {
  const retarget = (value: unknown): unknown => {
    if (typeof value === 'string') return value === from ? to : value === `#${machine.id}.${from}` ? `#${machine.id}.${to}` : value;
    if (Array.isArray(value)) return value.map(retarget);
    if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      const node = value as Record<string, unknown>;
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'target' ? retarget(v) : retargetTransitions(k, v)]));
    }
    return value;
  };
  // `on` values are targets (strings) or transition objects; `states` maps keys to nodes.
  const retargetTransitions = (key: string, value: unknown): unknown => {
    if (key === 'on' && value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([event, t]) => [event, retarget(t)]));
    if (key === 'states' && value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, retarget(v)]));
    return retarget(value);
  };
  return editMachine(machine, (root) => {
    const states = root.states ?? {};
    const renamed = Object.fromEntries(Object.entries(states).map(([k, v]) => [k === from ? to : k, v]));
    root.states = retarget(renamed) as Record<string, ConfigNode>;
    if (root['initial'] === from) root['initial'] = to;
  });
}
