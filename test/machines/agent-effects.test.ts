import { describe, expect, it } from 'vitest';
import type { AgentEffect } from '../../machines/agent.machine.js';
import { SAMPLES } from './agent-transitions.js';
import type { SampleName } from './agent-transitions.js';
import { AGENT_STATES, agentIn, startAgent } from './fixtures.js';
import type { AgentStateName } from './fixtures.js';

/** The five transitional states of DESIGN.md, and the two resting states that also ask the runtime for work. */
const EFFECT_OF: Partial<Record<AgentStateName, AgentEffect>> = {
  initializing: 'initialize',
  waking: 'wake',
  recovering: 'recover',
  evolving: 'evolve',
  terminating: 'terminate',
  sleeping: 'sleep',
  stopped: 'stop',
};

/** The effects requested along each state's route (fixtures ROUTE_TO), in order. */
const EFFECTS_ON_ROUTE: Record<AgentStateName, AgentEffect[]> = {
  created: [],
  initializing: ['initialize'],
  'active.awakeIdle': ['initialize'],
  'active.awakeRunning': ['initialize'],
  'active.awaitingTask': ['initialize'],
  sleeping: ['initialize', 'sleep'],
  waking: ['initialize', 'sleep', 'wake'],
  recovering: ['recover'],
  evolving: ['initialize', 'evolve'],
  stopped: ['initialize', 'stop'],
  terminating: ['terminate'],
  terminated: ['terminate'],
};

describe('agent machine: effect requests', () => {
  it.each(AGENT_STATES)('entering %s requests its own effect (if any), keyed <agentId>:<effect>:<epoch>', (state) => {
    const { actor, effects } = agentIn(state, 'agent-7');
    const expected = EFFECTS_ON_ROUTE[state];
    expect(effects).toEqual(
      expected.map((effect, index) => ({ type: 'effect.requested', effect, key: `agent-7:${effect}:${index + 1}` })),
    );
    // The epoch counts requests, so the next key cannot collide with these.
    expect(actor.getSnapshot().context.epoch).toBe(expected.length);
    const own = EFFECT_OF[state];
    if (own !== undefined) expect(expected.at(-1)).toBe(own);
  });

  it('one long life requests each effect with a distinct, increasing key', () => {
    const route: SampleName[] = [
      'INITIALIZE',
      'INITIALIZE.DONE',
      'IDLE nothing pending',
      'WAKE',
      'WAKE.REFUSED',
      'WAKE',
      'WAKE.FAILED',
      'RECOVER.DONE with snapshot',
      'EVOLVE',
      'EVOLVE.DONE accepted',
      'STOP',
      'TERMINATE',
    ];
    const { effects } = startAgent(route.map((name) => SAMPLES[name]));
    expect(effects.map((effect) => effect.key)).toEqual([
      'a1:initialize:1',
      'a1:sleep:2',
      'a1:wake:3',
      'a1:sleep:4',
      'a1:wake:5',
      'a1:recover:6',
      'a1:evolve:7',
      'a1:stop:8',
      'a1:terminate:9',
    ]);
    expect(new Set(effects.map((effect) => effect.key)).size).toBe(effects.length);
  });

  it('transitions between awake states request nothing', () => {
    const { actor, effects } = agentIn('active.awakeIdle');
    const before = effects.length;
    actor.send(SAMPLES['TURN.START queued input']);
    actor.send({ type: 'TURN.FINISHED', runId: 'run-2', facts: SAMPLES['TASK.SETTLED active task'].facts });
    actor.send(SAMPLES['TASK.SETTLED no active task']);
    expect(effects).toHaveLength(before);
    expect(actor.getSnapshot().context.epoch).toBe(before);
  });

  it('a failed recovery attempt does not re-request recovery (the runtime retries the same request)', () => {
    const { actor, effects } = agentIn('recovering');
    actor.send(SAMPLES['RECOVER.FAILED']);
    expect(effects.map((effect) => effect.key)).toEqual(['a1:recover:1']);
    expect(actor.getSnapshot().context.epoch).toBe(1);
  });

  it('agents of the same history never share a key across agent ids', () => {
    const one = agentIn('terminating', 'x1').effects.map((effect) => effect.key);
    const two = agentIn('terminating', 'x2').effects.map((effect) => effect.key);
    expect(one).toEqual(['x1:terminate:1']);
    expect(two).toEqual(['x2:terminate:1']);
  });
});
