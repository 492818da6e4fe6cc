import { describe, expect, it } from 'vitest';
import { createActor, type ActorRefFrom } from 'xstate';
import { agentMachine } from '../../machines/agent.machine.js';
import { emptyIdSet, idsOf } from '../../machines/id-set.js';
import { supervisorMachine } from '../../machines/supervisor.machine.js';
import type { SupervisorEmitted, SupervisorEvent } from '../../machines/supervisor.machine.js';

/** An agent whose effect requests throw: it dies as soon as it enters a transitional state. */
const brittleAgent = agentMachine.provide({
  actions: {
    requestEffect: () => {
      throw new Error('boom');
    },
  },
});

function startSupervisor(capacity = 2, machine = supervisorMachine) {
  const emitted: SupervisorEmitted[] = [];
  const errors: unknown[] = [];
  const actor = createActor(machine, { input: { shardId: 3, capacity } });
  actor.on('*', (event) => emitted.push(event));
  // The root always has an error subscriber (DESIGN.md); a supervisor error would land here.
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  return { actor, emitted, errors };
}

function agentRef(actor: ReturnType<typeof startSupervisor>['actor'], agentId: string) {
  return actor.system.get(`agent:${agentId}`) as ActorRefFrom<typeof agentMachine> | undefined;
}

describe('supervisor machine: spawning', () => {
  it('starts running with no live agent and no failure', () => {
    const { actor } = startSupervisor();
    expect(actor.getSnapshot().value).toBe('running');
    expect(actor.getSnapshot().context).toEqual({ shardId: 3, capacity: 2, agents: emptyIdSet, live: 0, failures: 0 });
  });

  it('AGENT.SPAWN spawns a child `agent` under its id, registered as agent:<id>', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    const child = actor.getSnapshot().children['a1'];
    expect(child).toBeDefined();
    expect(agentRef(actor, 'a1')).toBe(child);
    expect(agentRef(actor, 'a1')?.getSnapshot().value).toBe('created');
    expect(agentRef(actor, 'a1')?.getSnapshot().context.agentId).toBe('a1');
    expect(actor.getSnapshot().context.live).toBe(1);
    expect(emitted).toEqual([]);
  });

  it('a spawned agent is driven through the system registry', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    agentRef(actor, 'a1')?.send({ type: 'INITIALIZE' });
    expect(agentRef(actor, 'a1')?.getSnapshot().value).toBe('initializing');
  });

  it('refuses a spawn beyond capacity with agent.refused (shard_full), spawning nothing', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    expect(emitted).toEqual([{ type: 'agent.refused', agentId: 'a2', reason: 'shard_full' }]);
    expect(actor.getSnapshot().children['a2']).toBeUndefined();
    expect(agentRef(actor, 'a2')).toBeUndefined();
    expect(actor.getSnapshot().context.live).toBe(1);
  });

  it('counts attached (rehydrated) agents against the same capacity', () => {
    const { actor, emitted } = startSupervisor(2);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    expect(actor.getSnapshot().context.live).toBe(2);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r2' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    expect(emitted).toEqual([
      { type: 'agent.refused', agentId: 'r2', reason: 'shard_full' },
      { type: 'agent.refused', agentId: 'a2', reason: 'shard_full' },
    ]);
    expect(actor.getSnapshot().context.live).toBe(2);
  });

  it('AGENT.DETACHED stops the child and frees its slot', () => {
    const { actor } = startSupervisor(1);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    const child = agentRef(actor, 'a1');
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(child?.getSnapshot().status).toBe('stopped');
    expect(actor.getSnapshot().context.live).toBe(0);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    expect(actor.getSnapshot().children['a2']).toBeDefined();
  });

  // Regression: `live` was a bare counter, so a repeated AGENT.DETACHED (at-least-once delivery) freed a slot
  // the shard never got back, and the shard then held more agents than its capacity.
  it('a duplicate AGENT.DETACHED does not free a second slot', () => {
    const { actor, emitted } = startSupervisor(2);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a3' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a4' });
    expect(Object.keys(actor.getSnapshot().children).sort()).toEqual(['a2', 'a3']);
    expect(emitted).toEqual([{ type: 'agent.refused', agentId: 'a4', reason: 'shard_full' }]);
  });

  it('holds a set of agent ids: a repeated attach counts once', () => {
    const { actor } = startSupervisor(3);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    expect(idsOf(actor.getSnapshot().context.agents)).toEqual(['a1', 'r1']);
    expect(actor.getSnapshot().context.live).toBe(2);
    actor.send({ type: 'AGENT.DETACHED', agentId: 'r1' });
    expect(idsOf(actor.getSnapshot().context.agents)).toEqual(['a1']);
    expect(actor.getSnapshot().context.live).toBe(1);
  });

  it('detaching or failing an agent the shard does not hold frees nothing', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'ghost' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'ghost', error: 'elsewhere' });
    expect(idsOf(actor.getSnapshot().context.agents)).toEqual(['a1']);
    expect(actor.getSnapshot().context).toMatchObject({ live: 1, failures: 1 });
    expect(actor.getSnapshot().children['a1']).toBeDefined();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    expect(emitted.at(-1)).toEqual({ type: 'agent.refused', agentId: 'a2', reason: 'shard_full' });
  });

  // Regression: below capacity, a repeated AGENT.SPAWN (at-least-once delivery) spawned a second child with the
  // same systemId; XState then put the supervisor itself in status 'error', and every agent of the shard with it.
  it('a duplicate AGENT.SPAWN leaves the shard running with one agent', () => {
    const { actor, errors } = startSupervisor(3);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    expect(errors).toEqual([]);
    expect(actor.getSnapshot().status).toBe('active');
    expect(Object.keys(actor.getSnapshot().children)).toEqual(['a1']);
    expect(actor.getSnapshot().context.live).toBe(1);
  });

  it('never counts below zero', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'AGENT.DETACHED', agentId: 'ghost' });
    expect(actor.getSnapshot().context.live).toBe(0);
  });
});

describe('supervisor machine: failures', () => {
  it('a child that throws produces agent.failed with its id and is removed', () => {
    const machine = supervisorMachine.provide({ actors: { agent: brittleAgent } });
    const { actor, emitted, errors } = startSupervisor(2, machine);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    const child = agentRef(actor, 'a1');
    child?.send({ type: 'INITIALIZE' });
    expect(child?.getSnapshot().status).toBe('error');
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a1', error: 'boom' }]);
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(actor.getSnapshot().children['a2']).toBeDefined();
    expect(actor.getSnapshot().context).toMatchObject({ live: 1, failures: 1 });
    expect(actor.getSnapshot().status).toBe('active');
    expect(errors).toEqual([]);
  });

  it('a runtime-reported AGENT.FAILED stops the agent and is reported the same way', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'a1', error: 'lease lost' });
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a1', error: 'lease lost' }]);
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(actor.getSnapshot().context).toMatchObject({ live: 0, failures: 1 });
  });

  it('an error that is not an Error is reported as text', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    const event: SupervisorEvent = { type: 'xstate.error.actor.a1', error: 'plain failure' };
    actor.send(event);
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a1', error: 'plain failure' }]);
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
  });

  it('an error report that names no actor is not reported as an agent failure', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'xstate.error.actor.', error: new Error('orphan') });
    expect(emitted).toEqual([]);
    expect(actor.getSnapshot().context).toMatchObject({ live: 1, failures: 0 });
    expect(actor.getSnapshot().children['a1']).toBeDefined();
  });

  it('failures accumulate', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'AGENT.FAILED', agentId: 'x', error: 'one' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'y', error: 'two' });
    expect(actor.getSnapshot().context.failures).toBe(2);
  });
});

describe('supervisor machine: shutdown', () => {
  it('SHUTDOWN drains: spawns and attaches are refused (shutting_down)', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'SHUTDOWN' });
    expect(actor.getSnapshot().value).toBe('draining');
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    expect(emitted).toEqual([
      { type: 'agent.refused', agentId: 'a1', reason: 'shutting_down' },
      { type: 'agent.refused', agentId: 'r1', reason: 'shutting_down' },
    ]);
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(actor.getSnapshot().context.live).toBe(0);
  });

  it('while draining, detaching stops live agents and failures are still reported', () => {
    const { actor, emitted } = startSupervisor(3);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a2' });
    actor.send({ type: 'SHUTDOWN' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(actor.getSnapshot().context.live).toBe(1);
    actor.send({ type: 'AGENT.FAILED', agentId: 'a2', error: 'torn file' });
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a2', error: 'torn file' }]);
    expect(actor.getSnapshot().children['a2']).toBeUndefined();
    expect(actor.getSnapshot().context).toMatchObject({ live: 0, failures: 1 });
  });

  it('while draining, a child that throws is reported and removed', () => {
    const machine = supervisorMachine.provide({ actors: { agent: brittleAgent } });
    const { actor, emitted } = startSupervisor(2, machine);
    actor.send({ type: 'AGENT.SPAWN', agentId: 'a1' });
    actor.send({ type: 'SHUTDOWN' });
    agentRef(actor, 'a1')?.send({ type: 'TERMINATE', reason: 'shutdown' });
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a1', error: 'boom' }]);
    expect(actor.getSnapshot().children['a1']).toBeUndefined();
    expect(actor.getSnapshot().context.live).toBe(0);
  });

  it('while draining, detaching with no live agent changes nothing', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'SHUTDOWN' });
    expect(actor.getSnapshot().can({ type: 'AGENT.DETACHED', agentId: 'ghost' })).toBe(false);
    actor.send({ type: 'AGENT.DETACHED', agentId: 'ghost' });
    expect(actor.getSnapshot().context.live).toBe(0);
  });

  it('DRAINED stops the supervisor (final)', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'SHUTDOWN' });
    actor.send({ type: 'DRAINED' });
    expect(actor.getSnapshot().value).toBe('stopped');
    expect(actor.getSnapshot().status).toBe('done');
  });

  it('DRAINED is refused while still running: the supervisor must drain first', () => {
    const { actor } = startSupervisor();
    expect(actor.getSnapshot().can({ type: 'DRAINED' })).toBe(false);
    actor.send({ type: 'DRAINED' });
    expect(actor.getSnapshot().value).toBe('running');
  });

  it('SHUTDOWN while draining does nothing more', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'SHUTDOWN' });
    expect(actor.getSnapshot().can({ type: 'SHUTDOWN' })).toBe(false);
  });
});
