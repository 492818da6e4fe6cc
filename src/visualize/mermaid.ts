import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { diagramEdges, diagramNames, drawsRoot, nameOf, stateDescription, type DiagramEdge } from './diagram.js';
import { childNodes } from './graph-walk.js';

/**
 * Mermaid `stateDiagram-v2` text: nested states, `[*]` initial and final arrows, `--` between
 * parallel regions, one edge per drawn transition labelled `EVENT [guard]` (see diagram.ts for
 * which transitions are drawn).
 *
 * States are declared before any edge, and each edge is written in the block of the innermost
 * state containing both of its ends: Mermaid creates a state where it is first mentioned, so an
 * edge written elsewhere first could move or duplicate it.
 */
const INDENT = '  ';

function ancestors(node: AnyStateNode): AnyStateNode[] {
  const chain: AnyStateNode[] = [];
  for (let current = node.parent; current; current = current.parent) chain.push(current);
  return chain;
}

/** The node whose block holds the edge, or `null` for the top level (outside a drawn root). */
function edgeContainer(edge: DiagramEdge, target: AnyStateNode): AnyStateNode | null {
  const fromSource = ancestors(edge.branch.node);
  const fromTarget = new Set(ancestors(target));
  return fromSource.find((node) => fromTarget.has(node)) ?? null;
}

export function toMermaid(machine: AnyStateMachine): string {
  const names = diagramNames(machine);
  const edges = diagramEdges(machine, names);
  const byName = new Map<string, AnyStateNode>();
  const visit = (node: AnyStateNode): void => {
    byName.set(nameOf(names, node), node);
    childNodes(node).forEach(visit);
  };
  visit(machine.root);

  const edgesIn = new Map<AnyStateNode | null, DiagramEdge[]>();
  for (const edge of edges) {
    const target = byName.get(edge.target);
    if (!target) throw new Error(`edge to unknown state ${edge.target}`);
    const container = edgeContainer(edge, target);
    edgesIn.set(container, [...(edgesIn.get(container) ?? []), edge]);
  }
  const edgeLines = (container: AnyStateNode | null, depth: number): string[] =>
    (edgesIn.get(container) ?? []).map((edge) => `${INDENT.repeat(depth)}${edge.source} --> ${edge.target}: ${edge.label}`);

  const stateLines = (node: AnyStateNode, depth: number): string[] => {
    const pad = INDENT.repeat(depth);
    const name = nameOf(names, node);
    // A state renamed to stay unique (a repeated key) still shows its key.
    const description = stateDescription(node) ?? (name === node.key ? null : node.key);
    const lines: string[] = [];
    if (description) lines.push(`${pad}${name}: ${description}`);
    if (childNodes(node).length > 0) {
      lines.push(`${pad}state ${name} {`, ...blockLines(node, depth + 1), `${pad}}`);
    } else if (!description) {
      lines.push(`${pad}${name}`);
    }
    if (node.type === 'final') lines.push(`${pad}${name} --> [*]`);
    return lines;
  };

  const blockLines = (node: AnyStateNode, depth: number): string[] => {
    const pad = INDENT.repeat(depth);
    const lines: string[] = [];
    const initial = node.type === 'compound' ? node.initial.target[0] : undefined;
    if (initial) lines.push(`${pad}[*] --> ${nameOf(names, initial)}`);
    childNodes(node).forEach((child, index) => {
      if (node.type === 'parallel' && index > 0) lines.push(`${pad}--`);
      lines.push(...stateLines(child, depth));
    });
    lines.push(...edgeLines(node, depth));
    return lines;
  };

  const lines = ['stateDiagram-v2', `${INDENT}%% generated from the "${machine.id}" machine by npm run visualize: do not edit`];
  if (drawsRoot(machine, edges)) {
    lines.push(`${INDENT}[*] --> ${nameOf(names, machine.root)}`, ...stateLines(machine.root, 1), ...edgeLines(null, 1));
  } else {
    lines.push(...blockLines(machine.root, 1));
  }
  return `${lines.join('\n')}\n`;
}
