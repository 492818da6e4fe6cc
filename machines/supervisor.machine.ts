import { assign, enqueueActions, setup } from 'xstate';
import { addId, emptyIdSet, hasId, removeId, type IdSet } from './id-set.js';

/**
 * The root of the actor system, sharded: each supervisor holds at most `capacity` agents, because
 * one parent for every agent is quadratic in its child count (xstate-notes §1.6).
 *
 * Agents are root actors (XState cannot spawn a child from a persisted snapshot, and a child
 * cannot be passivated on its own): the runtime announces each live agent actor with
 * `AGENT.ATTACHED`, and hasCapacity decides whether this shard takes it (the runtime opens another
 * shard when none does). A passivated actor is `AGENT.DETACHED`; one that threw is `AGENT.FAILED`,
 * which the shard reports (`agent.failed`) so the runtime restores it into Recovering.
 * `Runtime.close()` drains every shard in one go: SHUTDOWN, a DETACHED per live agent, DRAINED.
 */
export interface SupervisorInput {
  shardId: number;
  capacity: number;
}

export interface SupervisorContext extends SupervisorInput {
  /** The agents this shard holds: a set, so a repeated attach or detach counts once. */
  agents: IdSet;
  live: number;
  failures: number;
}

export type SupervisorEvent =
  | { type: 'AGENT.ATTACHED'; agentId: string }
  | { type: 'AGENT.DETACHED'; agentId: string }
  | { type: 'AGENT.FAILED'; agentId: string; error: string }
  | { type: 'SHUTDOWN' }
  | { type: 'DRAINED' };

export type SupervisorEmitted =
  | { type: 'agent.failed'; agentId: string; error: string }
  | { type: 'agent.refused'; agentId: string; reason: 'shard_full' };

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    input: {} as SupervisorInput,
    events: {} as SupervisorEvent,
    emitted: {} as SupervisorEmitted,
  },
  guards: {
    // An agent the shard already holds keeps its place: a repeated attach is not a new one.
    hasCapacity: ({ context, event }) => context.live < context.capacity || ('agentId' in event && hasId(context.agents, event.agentId)),
    hasLiveAgents: ({ context }) => context.live > 0,
  },
  actions: {
    countIn: assign(({ context, event }) => {
      const agentId = 'agentId' in event ? event.agentId : null;
      const agents = agentId ? addId(context.agents, agentId) : context.agents;
      return agents === context.agents ? {} : { agents, live: context.live + 1 };
    }),
    countOut: assign(({ context, event }) => {
      const agentId = 'agentId' in event ? event.agentId : null;
      const agents = agentId ? removeId(context.agents, agentId) : context.agents;
      return agents === context.agents ? {} : { agents, live: context.live - 1 };
    }),
    reportFailure: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'AGENT.FAILED') return;
      enqueue.assign({ failures: context.failures + 1 });
      enqueue.emit({ type: 'agent.failed', agentId: event.agentId, error: event.error });
    }),
    refuse: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'AGENT.ATTACHED') enqueue.emit({ type: 'agent.refused', agentId: event.agentId, reason: 'shard_full' });
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({ ...input, agents: emptyIdSet, live: 0, failures: 0 }),
  initial: 'running',
  states: {
    running: {
      on: {
        'AGENT.ATTACHED': [{ guard: 'hasCapacity', actions: 'countIn' }, { actions: 'refuse' }],
        'AGENT.DETACHED': { actions: 'countOut' },
        'AGENT.FAILED': { actions: ['countOut', 'reportFailure'] },
        SHUTDOWN: 'draining',
      },
    },
    // Entered and left within one synchronous Runtime.close(): nothing can attach or fail meanwhile.
    draining: {
      on: {
        'AGENT.DETACHED': { guard: 'hasLiveAgents', actions: 'countOut' },
        DRAINED: 'stopped',
      },
    },
    stopped: { type: 'final' },
  },
});
