import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { childNodes, declaredActions } from './graph-walk.js';
import { actionRef, guardRef, toJsonValue, type GuardRef, type JsonValue } from './names.js';
import { Code, printInline, printSource, type SourceValue } from './source-printer.js';

/**
 * A self-contained `createMachine({...}, { guards, actions })` source file, rebuilt from the
 * resolved definition (not copied from the source text): ids, nesting, initial states, types,
 * every transition with its target, guard and action names, entry/exit actions and meta. Guards
 * and actions are stubs, so it pastes into stately.ai/viz as is and compiles on its own.
 *
 * Targets are written as sibling keys, `.child` paths or `#id` references, the same forms a
 * person would write. Invoked actors cannot be made self-contained and are refused.
 */
type Config = { [key: string]: SourceValue };

interface Needs {
  guards: Set<string>;
  actions: Set<string>;
  delays: Set<string>;
  helpers: Set<string>;
}

function defaultId(machine: AnyStateMachine, node: AnyStateNode): string {
  return [machine.id, ...node.path].join('.');
}

function isDescendant(node: AnyStateNode, ancestor: AnyStateNode): boolean {
  for (let current = node.parent; current; current = current.parent) if (current === ancestor) return true;
  return false;
}

function targetRef(source: AnyStateNode, target: AnyStateNode): string {
  const simple = (keys: string[]): boolean => keys.every((key) => !key.includes('.') && !key.startsWith('#'));
  if (source.parent && target.parent === source.parent && simple([target.key])) return target.key;
  const below = target.path.slice(source.path.length);
  if (isDescendant(target, source) && simple(below)) return `.${below.join('.')}`;
  return `#${target.id}`;
}

function guardSource(ref: GuardRef, needs: Needs): SourceValue {
  switch (ref.kind) {
    case 'named':
      needs.guards.add(ref.type);
      return ref.params === undefined ? ref.type : { type: ref.type, params: ref.params };
    case 'and':
    case 'or':
      needs.helpers.add(ref.kind);
      return new Code(`${ref.kind}(${printInline(ref.guards.map((guard) => guardSource(guard, needs)))})`);
    case 'not':
      needs.helpers.add('not');
      return new Code(`not(${printInline(guardSource(ref.guard, needs))})`);
    case 'stateIn':
      needs.helpers.add('stateIn');
      return new Code(`stateIn(${printInline(ref.state)})`);
  }
}

function actionSources(actions: readonly unknown[], needs: Needs): SourceValue[] {
  return actions.map((action) => {
    const ref = actionRef(action);
    needs.actions.add(ref.type);
    return ref.params === undefined ? ref.type : { type: ref.type, params: ref.params };
  });
}

function withJson(config: Config, key: string, value: unknown): void {
  const json: JsonValue | undefined = value === undefined ? undefined : toJsonValue(value);
  if (json !== undefined) config[key] = json;
}

function branchConfig(definition: AnyTransitionDefinition, needs: Needs): Config {
  const config: Config = {};
  const targets = [...(definition.target ?? [])].map((target) => targetRef(definition.source, target));
  if (targets.length === 1 && targets[0] !== undefined) config.target = targets[0];
  else if (targets.length > 1) config.target = targets;
  const guard = guardRef(definition.guard);
  if (guard) config.guard = guardSource(guard, needs);
  if (definition.actions.length > 0) config.actions = actionSources(definition.actions, needs);
  if (definition.reenter) config.reenter = true;
  if (typeof definition.description === 'string') config.description = definition.description;
  withJson(config, 'meta', definition.meta);
  return config;
}

function branchesConfig(definitions: readonly AnyTransitionDefinition[], needs: Needs): SourceValue {
  const branches = definitions.map((definition) => branchConfig(definition, needs));
  return branches.length === 1 && branches[0] ? branches[0] : branches;
}

function nodeConfig(machine: AnyStateMachine, node: AnyStateNode, needs: Needs): Config {
  if (node.invoke.length > 0) throw new Error(`${node.id} invokes actors: not exportable as a self-contained machine`);
  const config: Config = {};
  if (node === machine.root || node.id !== defaultId(machine, node)) config.id = node.id;
  if (node.type === 'parallel' || node.type === 'final' || node.type === 'history') config.type = node.type;
  if (node.type === 'history' && node.history) config.history = node.history;
  const initial = node.type === 'compound' ? node.initial.target[0] : undefined;
  if (initial) config.initial = initial.path.slice(node.path.length).join('.');
  if (node.description !== undefined) config.description = node.description;
  if (node.tags.length > 0) config.tags = [...node.tags];
  withJson(config, 'meta', node.meta);
  const entry = declaredActions(node, 'entry');
  const exit = declaredActions(node, 'exit');
  if (entry.length > 0) config.entry = actionSources(entry, needs);
  if (exit.length > 0) config.exit = actionSources(exit, needs);

  const delays = new Map<string, number | string>();
  for (const delayed of node.after) {
    if (typeof delayed.delay !== 'number' && typeof delayed.delay !== 'string') {
      throw new Error(`${node.id} has a computed delay: not exportable`);
    }
    delays.set(delayed.eventType, delayed.delay);
  }
  const on: Config = {};
  const after: Config = {};
  let onDone: SourceValue | undefined;
  for (const [event, definitions] of node.transitions) {
    const branches = branchesConfig(definitions, needs);
    const delay = delays.get(event);
    if (event === `xstate.done.state.${node.id}`) onDone = branches;
    else if (delay === undefined) on[event] = branches;
    else {
      if (typeof delay === 'string') needs.delays.add(delay);
      after[String(delay)] = branches;
    }
  }
  if (Object.keys(on).length > 0) config.on = on;
  if (Object.keys(after).length > 0) config.after = after;
  if (node.always && node.always.length > 0) config.always = branchesConfig(node.always, needs);
  if (onDone !== undefined) config.onDone = onDone;
  const children = childNodes(node);
  if (children.length > 0) {
    const states: Config = {};
    for (const child of children) states[child.key] = nodeConfig(machine, child, needs);
    config.states = states;
  }
  return config;
}

function stubs(names: Set<string>, body: string): SourceValue {
  const out: Config = {};
  for (const name of [...names].sort()) out[name] = new Code(body);
  return out;
}

export function toStatelySource(machine: AnyStateMachine): string {
  const needs: Needs = { guards: new Set(), actions: new Set(), delays: new Set(), helpers: new Set() };
  const config = nodeConfig(machine, machine.root, needs);
  const implementations: Config = {};
  if (needs.guards.size > 0) implementations.guards = stubs(needs.guards, '() => true');
  if (needs.actions.size > 0) implementations.actions = stubs(needs.actions, '() => {}');
  if (needs.delays.size > 0) implementations.delays = stubs(needs.delays, '0');
  const imports = ['createMachine', ...needs.helpers].sort().join(', ');
  return [
    `// Generated by \`npm run visualize\` from machines/index.ts (\`${machine.id}\`): do not edit.`,
    '// Self-contained: paste into https://stately.ai/viz as is. States, transitions, guard and action',
    '// names are the real machine\'s; the implementations are stubs (guards pass, actions do nothing).',
    `import { ${imports} } from 'xstate';`,
    '',
    `export const machine = createMachine(`,
    `  ${printSource(config, 1)},`,
    `  ${printSource(implementations, 1)},`,
    ');',
    '',
  ].join('\n');
}
