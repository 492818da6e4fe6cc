import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { stateNodes, transitionBranches, type TransitionBranch } from './graph-walk.js';
import { guardName } from './names.js';

/**
 * What the drawn formats (Mermaid, state-machine-cat) share: diagram-safe state names, which
 * transitions become edges, and the text on states and edges.
 *
 * Edges: every transition with a target is an edge. A targetless transition is drawn as a self-loop
 * only when it is guarded, so that every guard name is visible on the diagram; unguarded targetless
 * transitions (pure action handlers such as `TASK.SPAWN` or `task.finished`) are left out of the
 * drawing but still counted in the README's transition counts.
 */
export interface DiagramEdge {
  source: string;
  target: string;
  label: string;
  branch: TransitionBranch;
}

const DIAGRAM_KEYWORDS = new Set(['state', 'note', 'direction', 'class', 'classDef', 'style', 'end', 'as', 'TB', 'BT', 'LR', 'RL']);

function sanitize(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(safe) ? `s_${safe}` : safe;
}

/**
 * A diagram name per state node id: the node's key where it is unique in the machine, otherwise its
 * full path, so that names read like the source and never collide.
 */
export function diagramNames(machine: AnyStateMachine): Map<string, string> {
  const nodes = stateNodes(machine);
  const keyCount = new Map<string, number>();
  for (const node of nodes) {
    const key = sanitize(node === machine.root ? machine.id : node.key);
    keyCount.set(key, (keyCount.get(key) ?? 0) + 1);
  }
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const node of nodes) {
    const short = sanitize(node === machine.root ? machine.id : node.key);
    let name = keyCount.get(short) === 1 && !DIAGRAM_KEYWORDS.has(short) ? short : sanitize([machine.id, ...node.path].join('_'));
    while (taken.has(name)) name = `${name}_`;
    taken.add(name);
    names.set(node.id, name);
  }
  return names;
}

export function nameOf(names: Map<string, string>, node: AnyStateNode): string {
  const name = names.get(node.id);
  if (name === undefined) throw new Error(`state node ${node.id} has no diagram name`);
  return name;
}

/** XState's internal event names, shortened to the config key that produced them. */
export function eventLabel(branch: TransitionBranch): string {
  const { event, node } = branch;
  if (event === '') return 'always';
  if (event === `xstate.done.state.${node.id}`) return 'onDone';
  const afterPrefix = 'xstate.after.';
  const afterSuffix = `.${node.id}`;
  if (event.startsWith(afterPrefix) && event.endsWith(afterSuffix) && event.length > afterPrefix.length + afterSuffix.length) {
    return `after ${event.slice(afterPrefix.length, event.length - afterSuffix.length)}`;
  }
  return event;
}

export function edgeLabel(branch: TransitionBranch): string {
  return branch.guard ? `${eventLabel(branch)} [${guardName(branch.guard)}]` : eventLabel(branch);
}

export function diagramEdges(machine: AnyStateMachine, names: Map<string, string>): DiagramEdge[] {
  return transitionBranches(machine).flatMap((branch) => {
    const source = nameOf(names, branch.node);
    const label = edgeLabel(branch);
    if (branch.targets.length === 0) return branch.guard ? [{ source, target: source, label, branch }] : [];
    return branch.targets.map((target) => ({ source, target: nameOf(names, target), label, branch }));
  });
}

/**
 * The state's text beside its name when its `meta` holds labels, e.g. the agent's
 * `awakeIdle (active / awake_idle)`. A `null` label follows the agent machine's convention
 * (`AgentStateMeta`): the state keeps the previous label. Meta that only repeats the key adds nothing.
 */
export function stateDescription(node: AnyStateNode): string | null {
  const meta: unknown = node.meta;
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return null;
  const labels = Object.values(meta)
    .filter((value): value is string | null => value === null || typeof value === 'string')
    .map((value) => value ?? 'previous label');
  if (labels.length === 0 || labels.every((label) => label === node.key)) return null;
  return `${node.key} (${labels.join(' / ')})`;
}

/** The root is drawn as a box only when it has to be: parallel regions, or edges of its own. */
export function drawsRoot(machine: AnyStateMachine, edges: DiagramEdge[]): boolean {
  return (
    machine.root.type === 'parallel' ||
    edges.some((edge) => edge.branch.node === machine.root || edge.branch.targets.includes(machine.root))
  );
}
