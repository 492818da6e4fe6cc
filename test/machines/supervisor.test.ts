import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { supervisorMachine } from '../../machines/supervisor.machine.js';
import type { SupervisorContext, SupervisorEmitted } from '../../machines/supervisor.machine.js';
import { idsOf } from '../../machines/id-set.js';

/** The shard's context with its member set as sorted ids. */
function membership(actor: { getSnapshot(): { context: SupervisorContext } }): Omit<SupervisorContext, 'agents'> & { agents: string[] } {
  const context = actor.getSnapshot().context;
  return { ...context, agents: idsOf(context.agents) };
}

function startSupervisor(capacity = 2) {
  const emitted: SupervisorEmitted[] = [];
  const errors: unknown[] = [];
  const actor = createActor(supervisorMachine, { input: { shardId: 3, capacity } });
  actor.on('*', (event) => emitted.push(event));
  // The root always has an error subscriber (DESIGN.md); a supervisor error would land here.
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  return { actor, emitted, errors };
}

describe('supervisor machine: attaching', () => {
  it('starts running with no live agent and no failure', () => {
    const { actor } = startSupervisor();
    expect(actor.getSnapshot().value).toBe('running');
    expect(membership(actor)).toEqual({ shardId: 3, capacity: 2, agents: [], live: 0, failures: 0 });
  });

  it('AGENT.ATTACHED counts the agent in, and never spawns a child (agents are root actors)', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1 });
    expect(actor.getSnapshot().children).toEqual({});
    expect(emitted).toEqual([]);
  });

  it('refuses an attach beyond capacity with agent.refused (shard_full), counting nothing', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    expect(emitted).toEqual([{ type: 'agent.refused', agentId: 'a2', reason: 'shard_full' }]);
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1 });
  });

  it('a full shard still takes an agent it already holds (a repeated attach is no new one)', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    expect(emitted).toEqual([]);
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1 });
  });

  it('AGENT.DETACHED frees the slot', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    expect(actor.getSnapshot().context.live).toBe(0);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    expect(membership(actor)).toMatchObject({ agents: ['a2'], live: 1 });
    expect(emitted).toEqual([]);
  });

  // Regression: `live` was a bare counter, so a repeated AGENT.DETACHED (at-least-once delivery) freed a slot
  // the shard never got back, and the shard then held more agents than its capacity.
  it('a duplicate AGENT.DETACHED does not free a second slot', () => {
    const { actor, emitted } = startSupervisor(2);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a3' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a4' });
    expect(idsOf(actor.getSnapshot().context.agents)).toEqual(['a2', 'a3']);
    expect(emitted).toEqual([{ type: 'agent.refused', agentId: 'a4', reason: 'shard_full' }]);
  });

  it('holds a set of agent ids: a repeated attach counts once', () => {
    const { actor } = startSupervisor(3);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    expect(membership(actor)).toMatchObject({ agents: ['a1', 'r1'], live: 2 });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'r1' });
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1 });
  });

  it('detaching or failing an agent the shard does not hold frees nothing', () => {
    const { actor, emitted } = startSupervisor(1);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'ghost' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'ghost', error: 'elsewhere' });
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1, failures: 1 });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    expect(emitted.at(-1)).toEqual({ type: 'agent.refused', agentId: 'a2', reason: 'shard_full' });
  });

  it('never counts below zero', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'AGENT.DETACHED', agentId: 'ghost' });
    expect(actor.getSnapshot().context.live).toBe(0);
  });
});

describe('supervisor machine: failures', () => {
  it('AGENT.FAILED counts the agent out and reports agent.failed, so the runtime restores it', () => {
    const { actor, emitted, errors } = startSupervisor();
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'a1', error: 'lease lost' });
    expect(emitted).toEqual([{ type: 'agent.failed', agentId: 'a1', error: 'lease lost' }]);
    expect(membership(actor)).toMatchObject({ agents: ['a2'], live: 1, failures: 1 });
    expect(actor.getSnapshot().status).toBe('active');
    expect(errors).toEqual([]);
  });

  it('failures accumulate', () => {
    const { actor } = startSupervisor();
    actor.send({ type: 'AGENT.FAILED', agentId: 'x', error: 'one' });
    actor.send({ type: 'AGENT.FAILED', agentId: 'y', error: 'two' });
    expect(actor.getSnapshot().context.failures).toBe(2);
  });
});

describe('supervisor machine: shutdown', () => {
  it('SHUTDOWN drains: attaches and failures are no longer taken (Runtime.close() drains synchronously)', () => {
    const { actor, emitted } = startSupervisor();
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'SHUTDOWN' });
    expect(actor.getSnapshot().value).toBe('draining');
    expect(actor.getSnapshot().can({ type: 'AGENT.ATTACHED', agentId: 'r1' })).toBe(false);
    expect(actor.getSnapshot().can({ type: 'AGENT.FAILED', agentId: 'a1', error: 'late' })).toBe(false);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'r1' });
    expect(membership(actor)).toMatchObject({ agents: ['a1'], live: 1, failures: 0 });
    expect(emitted).toEqual([]);
  });

  it('while draining, detaching counts live agents out', () => {
    const { actor } = startSupervisor(3);
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a1' });
    actor.send({ type: 'AGENT.ATTACHED', agentId: 'a2' });
    actor.send({ type: 'SHUTDOWN' });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a1' });
    expect(membership(actor)).toMatchObject({ agents: ['a2'], live: 1 });
    actor.send({ type: 'AGENT.DETACHED', agentId: 'a2' });
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
