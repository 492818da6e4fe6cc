import { describe, expect, it } from 'vitest';
import { agentLabels } from '../../machines/agent.machine.js';
import type { AgentEvent, AgentSnapshot } from '../../machines/agent.machine.js';
import type { AgentStatus, LifecyclePhase } from '../../src/domain/index.js';
import { SAMPLES } from './agent-transitions.js';
import { AGENT_STATES, agentIn, statePath } from './fixtures.js';
import type { AgentStateName } from './fixtures.js';

/** DESIGN.md "The agent machine" table, row by row. Recovering is checked separately: it shows the previous label. */
const DESIGN_TABLE: Readonly<Record<Exclude<AgentStateName, 'recovering'>, { phase: LifecyclePhase; status: AgentStatus }>> = {
  created: { phase: 'created', status: 'booting' },
  initializing: { phase: 'initializing', status: 'booting' },
  'active.awakeIdle': { phase: 'active', status: 'awake_idle' },
  'active.awakeRunning': { phase: 'active', status: 'awake_running' },
  'active.awaitingTask': { phase: 'active', status: 'awaiting_task' },
  sleeping: { phase: 'sleeping', status: 'asleep' },
  waking: { phase: 'waking', status: 'asleep' },
  evolving: { phase: 'evolving', status: 'awake_idle' },
  // "Active (stopped)": a stopped agent is still alive in seed-002 terms.
  stopped: { phase: 'active', status: 'stopped' },
  terminating: { phase: 'terminating', status: 'stopped' },
  terminated: { phase: 'terminated', status: 'stopped' },
};

describe('agentLabels: the (phase, AgentStatus) pair of every state', () => {
  it('the table covers every state of the machine', () => {
    expect([...Object.keys(DESIGN_TABLE), 'recovering'].sort()).toEqual([...AGENT_STATES].sort());
  });

  it.each(Object.entries(DESIGN_TABLE))('%s → %o', (state, labels) => {
    const { actor } = agentIn(state as AgentStateName);
    expect(agentLabels(actor.getSnapshot())).toEqual(labels);
  });
});

describe('agentLabels: Recovering shows the label the agent had before', () => {
  const viaRecover: { from: AgentStateName; status: AgentStatus }[] = [
    { from: 'created', status: 'booting' },
    { from: 'initializing', status: 'booting' },
    { from: 'active.awakeIdle', status: 'awake_idle' },
    { from: 'active.awakeRunning', status: 'awake_running' },
    { from: 'active.awaitingTask', status: 'awaiting_task' },
    { from: 'sleeping', status: 'asleep' },
    { from: 'waking', status: 'asleep' },
    { from: 'evolving', status: 'awake_idle' },
    { from: 'stopped', status: 'stopped' },
    { from: 'terminating', status: 'stopped' },
  ];

  it.each(viaRecover)('RECOVER from $from shows (recovering, $status)', ({ from, status }) => {
    const { actor } = agentIn(from);
    const before = agentLabels(actor.getSnapshot()).status;
    actor.send(SAMPLES.RECOVER);
    expect(statePath(actor.getSnapshot().value)).toBe('recovering');
    expect(agentLabels(actor.getSnapshot())).toEqual({ phase: 'recovering', status });
    expect(status).toBe(before);
  });

  const viaFailure: { from: AgentStateName; event: AgentEvent; status: AgentStatus }[] = [
    { from: 'initializing', event: SAMPLES['INITIALIZE.FAILED recoverable'], status: 'booting' },
    { from: 'sleeping', event: SAMPLES['SLEEP.FAILED'], status: 'asleep' },
    { from: 'waking', event: SAMPLES['WAKE.FAILED'], status: 'asleep' },
    { from: 'evolving', event: SAMPLES['EVOLVE.FAILED'], status: 'awake_idle' },
    { from: 'terminating', event: SAMPLES['TERMINATE.FAILED'], status: 'stopped' },
  ];

  it.each(viaFailure)('$event.type from $from shows (recovering, $status)', ({ from, event, status }) => {
    const { actor } = agentIn(from);
    actor.send(event);
    expect(agentLabels(actor.getSnapshot())).toEqual({ phase: 'recovering', status });
  });

  it('a second recovery shows the label of its own origin, not the first one', () => {
    const { actor } = agentIn('active.awakeRunning');
    actor.send(SAMPLES.RECOVER);
    expect(agentLabels(actor.getSnapshot()).status).toBe('awake_running');
    actor.send(SAMPLES['RECOVER.DONE with snapshot']);
    expect(agentLabels(actor.getSnapshot())).toEqual({ phase: 'active', status: 'awake_idle' });
    actor.send(SAMPLES.STOP);
    actor.send(SAMPLES.RECOVER);
    expect(agentLabels(actor.getSnapshot())).toEqual({ phase: 'recovering', status: 'stopped' });
  });

  it('a failed recovery attempt keeps the previous label', () => {
    const { actor } = agentIn('sleeping');
    actor.send(SAMPLES.RECOVER);
    actor.send(SAMPLES['RECOVER.FAILED']);
    expect(agentLabels(actor.getSnapshot())).toEqual({ phase: 'recovering', status: 'asleep' });
  });
});

describe('agentLabels: a snapshot without labels', () => {
  it('refuses to guess and names the state', () => {
    const { actor } = agentIn('created');
    const real = actor.getSnapshot();
    // A state node without meta cannot be reached in the machine; a snapshot whose nodes carry none stands in.
    const unlabelled = { value: 'nowhere', context: real.context, getMeta: () => ({}) } as unknown as AgentSnapshot;
    expect(() => agentLabels(unlabelled)).toThrow('agent state "nowhere" has no labels');
  });
});
