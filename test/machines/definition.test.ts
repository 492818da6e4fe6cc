import { describe, expect, it } from 'vitest';
import { agentMachine } from '../../machines/agent.machine.js';
import { machines } from '../../machines/index.js';

const AGENT_GUARDS = [
  'hasQueuedInput',
  'canSleep',
  'isStaleRun',
  'hasActiveTasks',
  'noActiveTasks',
  'isRecoverableFailure',
  'hasVerifiedRecoveryPoint',
  'stoppedAsleep',
];

interface Entry {
  where: string;
  value: unknown;
}

/** Every `guard` value and every action/entry/exit item anywhere in a serialized definition. */
function collect(node: unknown, where = '$', guards: Entry[] = [], actions: Entry[] = []) {
  if (Array.isArray(node)) {
    node.forEach((child, index) => collect(child, `${where}[${index}]`, guards, actions));
  } else if (node !== null && typeof node === 'object') {
    for (const [key, child] of Object.entries(node)) {
      if (key === 'guard') guards.push({ where: `${where}.guard`, value: child });
      if ((key === 'actions' || key === 'entry' || key === 'exit') && Array.isArray(child)) {
        child.forEach((action: unknown, index) => actions.push({ where: `${where}.${key}[${index}]`, value: action }));
      }
      collect(child, `${where}.${key}`, guards, actions);
    }
  }
  return { guards, actions };
}

function nameOf(entry: Entry): string | null {
  if (typeof entry.value === 'string') return entry.value;
  if (entry.value !== null && typeof entry.value === 'object' && 'type' in entry.value) {
    const { type } = entry.value;
    return typeof type === 'string' ? type : null;
  }
  return null;
}

describe('machine definitions serialize with names (Stately visualizer, /api/machines)', () => {
  it('the agent definition names each of its guards', () => {
    const json = JSON.stringify(agentMachine.toJSON());
    for (const guard of AGENT_GUARDS) expect(json, guard).toContain(`"guard":"${guard}"`);
  });

  it.each(Object.entries(machines))('%s: no guard or action serializes as null (nothing inline)', (_, machine) => {
    const definition: unknown = JSON.parse(JSON.stringify(machine.toJSON()));
    const { guards, actions } = collect(definition);
    expect(actions.length).toBeGreaterThan(0);
    for (const entry of [...guards, ...actions]) expect(nameOf(entry), entry.where).toMatch(/^[a-zA-Z]+$/);
  });

  it('the agent definition lists the guards it uses, and only those', () => {
    const { guards } = collect(JSON.parse(JSON.stringify(agentMachine.toJSON())));
    expect([...new Set(guards.map((entry) => entry.value))].sort()).toEqual([...AGENT_GUARDS].sort());
  });

  it('the registry holds the four machines under their own ids', () => {
    expect(Object.fromEntries(Object.entries(machines).map(([name, machine]) => [name, machine.id]))).toEqual({
      agent: 'agent',
      task: 'task',
      continuation: 'continuation',
      supervisor: 'supervisor',
    });
  });
});
