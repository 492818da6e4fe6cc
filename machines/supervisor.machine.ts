import { assign, enqueueActions, setup } from 'xstate';
import { agentMachine } from './agent.machine.js';
import { addId, emptyIdSet, hasId, removeId, type IdSet } from './id-set.js';

/**
 * The root of the actor system, sharded: each supervisor owns at most `capacity` agents, because
 * spawning under one parent is quadratic in its child count (xstate-notes §1.6).
 *
 * New agents are spawned here by their registered key (`agent`, systemId `agent:<id>`). An agent
 * rehydrated from a persisted snapshot is created by the runtime with this supervisor as its
 * parent (XState cannot spawn a child from a snapshot) and announced with `AGENT.ATTACHED`.
 * A child's error arrives as `xstate.error.actor.<id>`; the supervisor stops the dead child and
 * asks the runtime to restore it into Recovering (`agent.failed`).
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
  | { type: 'AGENT.SPAWN'; agentId: string }
  | { type: 'AGENT.ATTACHED'; agentId: string }
  | { type: 'AGENT.DETACHED'; agentId: string }
  | { type: 'AGENT.FAILED'; agentId: string; error: string }
  /** XState's own report of a child that threw: the id follows the prefix. */
  | { type: `xstate.error.actor.${string}`; error: unknown }
  | { type: 'SHUTDOWN' }
  | { type: 'DRAINED' };

export type SupervisorEmitted =
  | { type: 'agent.failed'; agentId: string; error: string }
  | { type: 'agent.refused'; agentId: string; reason: 'shard_full' | 'shutting_down' };

const ERROR_PREFIX = 'xstate.error.actor.';

function failedAgentId(event: SupervisorEvent): string | null {
  if (event.type === 'AGENT.FAILED') return event.agentId;
  return event.type.startsWith(ERROR_PREFIX) ? event.type.slice(ERROR_PREFIX.length) : null;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    input: {} as SupervisorInput,
    events: {} as SupervisorEvent,
    emitted: {} as SupervisorEmitted,
  },
  actors: { agent: agentMachine },
  guards: {
    // An agent the shard already holds keeps its place: a repeated spawn or attach is not a new one.
    hasCapacity: ({ context, event }) => context.live < context.capacity || ('agentId' in event && hasId(context.agents, event.agentId)),
    hasLiveAgents: ({ context }) => context.live > 0,
  },
  actions: {
    spawnAgent: enqueueActions(({ context, event, enqueue }) => {
      // A second child under the same systemId would put the whole shard in error.
      if (event.type !== 'AGENT.SPAWN' || hasId(context.agents, event.agentId)) return;
      enqueue.spawnChild('agent', { id: event.agentId, systemId: `agent:${event.agentId}`, input: { agentId: event.agentId } });
    }),
    // O(1) per event: the set copies one path, and `live` follows only a real change of membership.
    countIn: assign(({ context, event }) => {
      const agentId = 'agentId' in event ? event.agentId : null;
      const agents = agentId ? addId(context.agents, agentId) : context.agents;
      return agents === context.agents ? {} : { agents, live: context.live + 1 };
    }),
    countOut: assign(({ context, event }) => {
      const agentId = failedAgentId(event) ?? ('agentId' in event ? event.agentId : null);
      const agents = agentId ? removeId(context.agents, agentId) : context.agents;
      return agents === context.agents ? {} : { agents, live: context.live - 1 };
    }),
    stopAgent: enqueueActions(({ event, enqueue }) => {
      const agentId = failedAgentId(event) ?? ('agentId' in event ? event.agentId : null);
      if (agentId) enqueue.stopChild(agentId);
    }),
    reportFailure: enqueueActions(({ context, event, enqueue }) => {
      const agentId = failedAgentId(event);
      if (!agentId) return;
      enqueue.assign({ failures: context.failures + 1 });
      const error = 'error' in event ? errorText(event.error) : 'unknown error';
      enqueue.emit({ type: 'agent.failed', agentId, error });
    }),
    refuse: enqueueActions(({ event, enqueue }, params: { reason: 'shard_full' | 'shutting_down' }) => {
      if (event.type === 'AGENT.SPAWN' || event.type === 'AGENT.ATTACHED') {
        enqueue.emit({ type: 'agent.refused', agentId: event.agentId, reason: params.reason });
      }
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({ ...input, agents: emptyIdSet, live: 0, failures: 0 }),
  initial: 'running',
  states: {
    running: {
      on: {
        'AGENT.SPAWN': [
          { guard: 'hasCapacity', actions: ['spawnAgent', 'countIn'] },
          { actions: { type: 'refuse', params: { reason: 'shard_full' } } },
        ],
        'AGENT.ATTACHED': [
          { guard: 'hasCapacity', actions: 'countIn' },
          { actions: { type: 'refuse', params: { reason: 'shard_full' } } },
        ],
        'AGENT.DETACHED': { actions: ['stopAgent', 'countOut'] },
        'AGENT.FAILED': { actions: ['stopAgent', 'countOut', 'reportFailure'] },
        'xstate.error.actor.*': { actions: ['stopAgent', 'countOut', 'reportFailure'] },
        SHUTDOWN: 'draining',
      },
    },
    draining: {
      on: {
        'AGENT.SPAWN': { actions: { type: 'refuse', params: { reason: 'shutting_down' } } },
        'AGENT.ATTACHED': { actions: { type: 'refuse', params: { reason: 'shutting_down' } } },
        'AGENT.DETACHED': [
          { guard: 'hasLiveAgents', actions: ['stopAgent', 'countOut'] },
        ],
        'AGENT.FAILED': { actions: ['stopAgent', 'countOut', 'reportFailure'] },
        'xstate.error.actor.*': { actions: ['stopAgent', 'countOut', 'reportFailure'] },
        DRAINED: 'stopped',
      },
    },
    stopped: { type: 'final' },
  },
});
