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
