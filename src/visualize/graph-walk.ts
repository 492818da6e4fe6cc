import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { guardLeaves, guardName, guardRef, type GuardRef } from './names.js';

/**
 * A walk of a machine's resolved definition (`machine.root`), in document order, shared by every
 * export format, the model-based coverage report and `/api/machines`.
 */
export interface MachineTransition {
  /** State node id of the node that declares the transition. */
  source: string;
  /** XState event type; `''` for an eventless (`always`) transition. */
  event: string;
  /** Target state node id; several targets are joined with `,`; `null` for a targetless transition. */
  target: string | null;
  /** Guard name (see `guardName`); `null` when unguarded. */
  guard: string | null;
  /** Position among the transitions of the same (source, event), from 0: XState tries them in order. */
  branch: number;
}

/** One transition branch with the resolved objects behind it. */
export interface TransitionBranch {
  node: AnyStateNode;
  event: string;
  branch: number;
  definition: AnyTransitionDefinition;
  targets: AnyStateNode[];
  guard: GuardRef | null;
}

export function childNodes(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states);
}

/**
 * Entry or exit actions as declared. The resolved `node.entry`/`node.exit` also hold the
 * raise/cancel actions XState adds for `after` timers, which are not the machine's own.
 */
export function declaredActions(node: AnyStateNode, kind: 'entry' | 'exit'): readonly unknown[] {
  const actions: unknown = node.config[kind];
  if (actions === undefined) return [];
  return Array.isArray(actions) ? actions : [actions];
}

/** Every state node, root first, depth-first in document order. */
export function stateNodes(machine: AnyStateMachine): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  const visit = (node: AnyStateNode): void => {
    out.push(node);
    childNodes(node).forEach(visit);
  };
  visit(machine.root);
  return out;
}

/** The state ids of a machine, without the root (always active, so never a state to reach). */
export function machineStates(machine: AnyStateMachine): string[] {
  return stateNodes(machine)
    .filter((node) => node !== machine.root)
    .map((node) => node.id);
}

export function transitionBranches(machine: AnyStateMachine): TransitionBranch[] {
  const out: TransitionBranch[] = [];
  const add = (node: AnyStateNode, event: string, definitions: readonly AnyTransitionDefinition[]): void => {
    definitions.forEach((definition, branch) => {
      out.push({ node, event, branch, definition, targets: [...(definition.target ?? [])], guard: guardRef(definition.guard) });
    });
  };
  for (const node of stateNodes(machine)) {
    for (const [event, definitions] of node.transitions) add(node, event, definitions);
    if (node.always) add(node, '', node.always);
  }
  return out;
}

export function toMachineTransition(branch: TransitionBranch): MachineTransition {
  return {
    source: branch.node.id,
    event: branch.event,
    target: branch.targets.length > 0 ? branch.targets.map((target) => target.id).join(',') : null,
    guard: branch.guard ? guardName(branch.guard) : null,
    branch: branch.branch,
  };
}

/** Every (source, event, branch) of the definition once; guarded alternatives are separate branches. */
export function machineTransitions(machine: AnyStateMachine): MachineTransition[] {
  return transitionBranches(machine).map(toMachineTransition);
}

/** The named guards a machine uses (operands of `and`/`or`/`not` included), sorted. */
export function machineGuards(machine: AnyStateMachine): string[] {
  const names = new Set<string>();
  for (const branch of transitionBranches(machine)) {
    if (branch.guard) guardLeaves(branch.guard).forEach((name) => names.add(name));
  }
  return [...names].sort();
}
