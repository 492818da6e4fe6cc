import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { agentMachine, machines } from '../../machines/index.js';
import { machineGuards, machineTransitions } from '../../src/visualize/graph-walk.js';
import { toMermaid } from '../../src/visualize/mermaid.js';

const EDGE = /^\s*(\S+) --> (\S+): (.+)$/;

function edgeLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => EDGE.test(line))
    .map((line) => line.trim());
}

/** The project's machines have unique state keys, so the diagram name is the last id segment. */
function shortName(id: string): string {
  return id.split('.').at(-1) ?? id;
}

/** The lines of the `state <name> { ... }` block (nested braces counted). */
function block(text: string, name: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.trim() === `state ${name} {`);
  if (start < 0) throw new Error(`no block for ${name}`);
  let depth = 0;
  for (let i = start; i < lines.length; i++) {
    depth += (lines[i]!.match(/\{/g) ?? []).length - (lines[i]!.match(/\}/g) ?? []).length;
    if (depth === 0) return lines.slice(start + 1, i).map((line) => line.trim());
  }
  throw new Error(`unclosed block for ${name}`);
}

describe('toMermaid', () => {
  it.each(Object.keys(machines))('%s: one edge per transition with a target or a guard, labelled EVENT [guard]', (name) => {
    const machine = machines[name as keyof typeof machines];
    const expected = machineTransitions(machine)
      .filter((t) => t.target !== null || t.guard !== null)
      .map((t) => {
        const source = shortName(t.source);
        const target = t.target === null ? source : shortName(t.target);
        return `${source} --> ${target}: ${t.event}${t.guard === null ? '' : ` [${t.guard}]`}`;
      });
    const text = toMermaid(machine);
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    expect([...edgeLines(text)].sort()).toEqual([...expected].sort());
    for (const guard of machineGuards(machine)) expect(text).toContain(`[${guard}]`);
  });

  it('leaves out unguarded targetless transitions (pure action handlers)', () => {
    const text = toMermaid(agentMachine);
    expect(text).not.toContain('TASK.SPAWN');
    expect(text).not.toContain('task.finished');
    expect(text).not.toContain('RECOVER.FAILED');
    expect(toMermaid(machines.supervisor)).toContain('running --> running: AGENT.ATTACHED [hasCapacity]');
  });

  it('labels every agent state with its phase / status meta (DESIGN.md table)', () => {
    const lines = toMermaid(agentMachine).split('\n').map((line) => line.trim());
    expect(lines).toEqual(
      expect.arrayContaining([
        'created: created (created / booting)',
        'initializing: initializing (initializing / booting)',
        'awakeIdle: awakeIdle (active / awake_idle)',
        'awakeRunning: awakeRunning (active / awake_running)',
        'awaitingTask: awaitingTask (active / awaiting_task)',
        'sleeping: sleeping (sleeping / asleep)',
        'waking: waking (waking / asleep)',
        'recovering: recovering (recovering / previous label)',
        'evolving: evolving (evolving / awake_idle)',
        'stopped: stopped (active / stopped)',
        'terminating: terminating (terminating / stopped)',
        'terminated: terminated (terminated / stopped)',
      ]),
    );
  });

  it('nests states, marks initial and final states, and keeps inner edges inside their block', () => {
    const text = toMermaid(agentMachine);
    expect(text.split('\n')).toContain('  [*] --> created');
    expect(text).toContain('terminated --> [*]');
    const active = block(text, 'active');
    expect(active[0]).toBe('[*] --> awakeIdle');
    expect(active).toContain('awakeIdle --> awakeRunning: TURN.START [hasQueuedInput]');
    // Edges that leave the compound state are written outside it.
    expect(active).not.toContain('awakeIdle --> sleeping: IDLE [canSleep]');
    expect(text).toContain('awakeIdle --> sleeping: IDLE [canSleep]');
  });

  it('separates parallel regions with --', () => {
    const root = block(toMermaid(machines.continuation), 'continuation');
    const separator = root.indexOf('--');
    expect(separator).toBeGreaterThan(0);
    expect(root.slice(0, separator)).toContain('state wait {');
    expect(root.slice(separator)).toContain('state wakeHint {');
  });

  it('gives repeated keys and diagram keywords distinct names', () => {
    const machine = setup({}).createMachine({
      id: 'm',
      type: 'parallel',
      states: {
        a: { initial: 'idle', states: { idle: { on: { GO: 'end' } }, end: {} } },
        b: { initial: 'idle', states: { idle: { on: { GO: 'end' } }, end: {} } },
      },
    });
    const text = toMermaid(machine);
    expect(edgeLines(text)).toEqual(['m_a_idle --> m_a_end: GO', 'm_b_idle --> m_b_end: GO']);
    // Renamed states still read as their keys.
    expect(text).toContain('m_a_idle: idle\n');
    expect(text).toContain('m_b_end: end\n');
  });
});
