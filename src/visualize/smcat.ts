import { render, type IActionType, type IState, type IStateMachine, type ITransition } from 'state-machine-cat';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { diagramEdges, diagramNames, drawsRoot, nameOf, stateDescription } from './diagram.js';
import { childNodes, declaredActions } from './graph-walk.js';
import { actionLabel, actionRef, guardName } from './names.js';

/**
 * The machine as state-machine-cat JSON, rendered offline to SVG (through its bundled wasm
 * Graphviz, whatever `dot` is installed, so output is the same on every machine) and to SCXML.
 *
 * The same edges as the Mermaid diagram (diagram.ts). XState final states are named states, so each
 * is drawn as a regular state with an arrow to a final pseudo-state, as in Mermaid. Pseudo-states
 * are named `<state>.initial` / `<state>.final`: diagram names never contain a dot, so they cannot clash.
 * Transitions are hoisted to the top level, where state-machine-cat resolves nested names.
 */
type Transition = Omit<ITransition, 'id'>;

function entryExit(node: AnyStateNode): IActionType[] {
  return [
    ...declaredActions(node, 'entry').map((action): IActionType => ({ type: 'entry', body: actionLabel(actionRef(action)) })),
    ...declaredActions(node, 'exit').map((action): IActionType => ({ type: 'exit', body: actionLabel(actionRef(action)) })),
  ];
}

export function toSmcatJson(machine: AnyStateMachine): IStateMachine {
  const names = diagramNames(machine);
  const edges = diagramEdges(machine, names);
  const transitions: Transition[] = [];

  const stateList = (parent: AnyStateNode): IState[] => {
    const parentName = nameOf(names, parent);
    const states: IState[] = [];
    const initial = parent.type === 'compound' ? parent.initial.target[0] : undefined;
    if (initial) {
      states.push({ name: `${parentName}.initial`, type: 'initial' });
      transitions.push({ from: `${parentName}.initial`, to: nameOf(names, initial) });
    }
    for (const child of childNodes(parent)) {
      states.push(stateOf(child));
      if (child.type === 'final') {
        const name = nameOf(names, child);
        states.push({ name: `${name}.final`, type: 'final' });
        transitions.push({ from: name, to: `${name}.final` });
      }
    }
    return states;
  };

  const stateOf = (node: AnyStateNode): IState => {
    const state: IState = {
      name: nameOf(names, node),
      type: node.type === 'parallel' ? 'parallel' : 'regular',
      label: stateDescription(node) ?? node.key,
    };
    const actions = entryExit(node);
    if (actions.length > 0) state.actions = actions;
    if (childNodes(node).length > 0) state.statemachine = { states: stateList(node) };
    return state;
  };

  const rootName = nameOf(names, machine.root);
  let states: IState[];
  if (drawsRoot(machine, edges)) {
    transitions.push({ from: `${rootName}.initial`, to: rootName });
    states = [{ name: `${rootName}.initial`, type: 'initial' }, stateOf(machine.root)];
  } else {
    states = stateList(machine.root);
  }

  for (const edge of edges) {
    const transition: Transition = { from: edge.source, to: edge.target, label: edge.label };
    // SCXML keeps the raw XState event; eventless transitions have none.
    if (edge.branch.event !== '') transition.event = edge.branch.event;
    if (edge.branch.guard) transition.cond = guardName(edge.branch.guard);
    transitions.push(transition);
  }
  return { states, transitions: transitions.map((transition, index) => ({ id: index + 1, ...transition })) };
}

export async function toSvg(machine: AnyStateMachine): Promise<string> {
  return render(toSmcatJson(machine), { inputType: 'json', outputType: 'svg', direction: 'top-down' });
}

export async function toScxml(machine: AnyStateMachine): Promise<string> {
  return render(toSmcatJson(machine), { inputType: 'json', outputType: 'scxml' });
}
