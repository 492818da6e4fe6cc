import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { agentMachine, machines } from '../../machines/index.js';
import { machineGuards, machineStates, machineTransitions } from '../../src/visualize/graph-walk.js';
import { toMermaid } from '../../src/visualize/mermaid.js';
import { machineSummary } from '../../src/visualize/summary.js';

/** Counts transitions straight from XState's definition JSON, independently of the walk. */
function definitionTransitionCount(machine: AnyStateMachine): number {
  type Definition = { transitions?: unknown[]; states?: Record<string, Definition> };
  const count = (node: Definition): number =>
    (node.transitions?.length ?? 0) + Object.values(node.states ?? {}).reduce((sum, child) => sum + count(child), 0);
  return count(JSON.parse(JSON.stringify(machine.toJSON())) as Definition);
}

describe('machineStates', () => {
  it('lists the agent state ids in document order, without the root', () => {
    expect(machineStates(agentMachine)).toEqual([
      'agent.created',
      'agent.initializing',
      'agent.active',
      'agent.active.awakeIdle',
      'agent.active.awakeRunning',
      'agent.active.awaitingTask',
      'agent.sleeping',
      'agent.waking',
      'agent.recovering',
      'agent.evolving',
      'agent.stopped',
      'agent.terminating',
      'agent.terminated',
    ]);
  });

  it('includes the regions of a parallel machine', () => {
    expect(machineStates(machines.continuation)).toContain('continuation.wait');
    expect(machineStates(machines.continuation)).toContain('continuation.wakeHint.pending');
  });
});

describe('machineTransitions', () => {
  it('keeps each guarded branch of one event separately, in order, with targetless ones as null', () => {
    const finished = machineTransitions(agentMachine).filter(
      (t) => t.source === 'agent.active.awakeRunning' && t.event === 'TURN.FINISHED',
    );
    expect(finished).toEqual([
      { source: 'agent.active.awakeRunning', event: 'TURN.FINISHED', target: null, guard: 'isStaleRun', branch: 0 },
      { source: 'agent.active.awakeRunning', event: 'TURN.FINISHED', target: 'agent.active.awaitingTask', guard: 'hasActiveTasks', branch: 1 },
      { source: 'agent.active.awakeRunning', event: 'TURN.FINISHED', target: 'agent.active.awakeIdle', guard: null, branch: 2 },
    ]);
  });

  it('includes transitions declared on the root and on compound states', () => {
    const transitions = machineTransitions(agentMachine);
    expect(transitions).toContainEqual({ source: 'agent', event: 'task.finished', target: null, guard: null, branch: 0 });
    expect(transitions).toContainEqual({ source: 'agent.active', event: 'STOP', target: 'agent.stopped', guard: null, branch: 0 });
  });

  it.each(Object.keys(machines))('counts %s the same way as its XState definition', (name) => {
    const machine = machines[name as keyof typeof machines];
    expect(machineTransitions(machine)).toHaveLength(definitionTransitionCount(machine));
  });

  it('names the guards the agent uses, sorted', () => {
    const guards = machineGuards(agentMachine);
    expect(guards).toEqual([...guards].sort());
    expect(guards).toEqual(expect.arrayContaining([
      'canSleep',
      'hasActiveTasks',
      'hasQueuedInput',
      'hasVerifiedRecoveryPoint',
      'isRecoverableFailure',
      'isStaleRun',
      'noActiveTasks',
    ]));
  });
});

describe('machineSummary', () => {
  it.each(Object.keys(machines))('summarises %s with the walk counts and the Mermaid text', (name) => {
    const machine = machines[name as keyof typeof machines];
    const summary = machineSummary(name, machine);
    expect(summary).toEqual({
      name,
      states: machineStates(machine).length,
      transitions: definitionTransitionCount(machine),
      mermaid: toMermaid(machine),
    });
  });

  it('gives the agent its 13 states', () => {
    expect(machineSummary('agent', agentMachine).states).toBe(13);
  });
});
