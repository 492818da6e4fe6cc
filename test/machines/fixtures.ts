import { createActor, type StateValue } from 'xstate';
import { agentMachine } from '../../machines/agent.machine.js';
import type { AgentEmitted, AgentEvent } from '../../machines/agent.machine.js';
import { emptyFacts } from '../../src/domain/index.js';
import type { SchedulerFacts, TaskStatus } from '../../src/domain/index.js';

export const AGENT_ID = 'a1';
export const RUN_ID = 'run-1';

/** Facts of an awake, idle agent with nothing at all, overridden by `patch`. */
export function facts(patch: Partial<SchedulerFacts> = {}): SchedulerFacts {
  return { ...emptyFacts(), ...patch };
}

export function taskFact(id: string, status: TaskStatus): SchedulerFacts['tasks'][number] {
  return { id, status, work_item_id: null };
}

/** One queued message: the only thing TURN.START's guard asks for. */
export const QUEUED = facts({ queue: { queued: 1, interrupted: 0 } });
/** A running task: keeps the agent awaiting_task and awake. */
export const WITH_TASK = facts({ tasks: [taskFact('t1', 'running')] });
/** Nothing at all: the agent may sleep, a finished turn goes back to idle. */
export const NOTHING = facts();

/** Every leaf state of the agent machine, by its dotted path. */
export const AGENT_STATES = [
  'created',
  'initializing',
  'active.awakeIdle',
  'active.awakeRunning',
  'active.awaitingTask',
  'sleeping',
  'waking',
  'recovering',
  'evolving',
  'stopped',
  'terminating',
  'terminated',
] as const;
export type AgentStateName = (typeof AGENT_STATES)[number];

const ACTIVE: AgentEvent[] = [{ type: 'INITIALIZE' }, { type: 'INITIALIZE.DONE' }];
const RUNNING: AgentEvent[] = [...ACTIVE, { type: 'TURN.START', runId: RUN_ID, facts: QUEUED }];
const SLEEPING: AgentEvent[] = [...ACTIVE, { type: 'IDLE', facts: NOTHING }];

/** A shortest route from `created` to each state. */
export const ROUTE_TO: Readonly<Record<AgentStateName, readonly AgentEvent[]>> = {
  created: [],
  initializing: [{ type: 'INITIALIZE' }],
  'active.awakeIdle': ACTIVE,
  'active.awakeRunning': RUNNING,
  'active.awaitingTask': [...RUNNING, { type: 'TURN.FINISHED', runId: RUN_ID, facts: WITH_TASK }],
  sleeping: SLEEPING,
  waking: [...SLEEPING, { type: 'WAKE', reason: 'operator message' }],
  recovering: [{ type: 'RECOVER', reason: 'inconsistency' }],
  evolving: [...ACTIVE, { type: 'EVOLVE', reason: 'candidate change' }],
  stopped: [...ACTIVE, { type: 'STOP', reason: 'operator' }],
  terminating: [{ type: 'TERMINATE', reason: 'retired' }],
  terminated: [{ type: 'TERMINATE', reason: 'retired' }, { type: 'TERMINATE.DONE' }],
};

/** A dotted path (`active.awakeIdle`) of a non-parallel state value. */
export function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const entries = Object.entries(value);
  const [first] = entries;
  if (entries.length !== 1 || !first) throw new Error(`not a single-branch state value: ${JSON.stringify(value)}`);
  const [key, child] = first;
  return child === undefined ? key : `${key}.${statePath(child)}`;
}

/** A started agent actor that recorded every effect it requested, driven along `events`. */
export function startAgent(events: readonly AgentEvent[] = [], agentId = AGENT_ID) {
  const effects: AgentEmitted[] = [];
  const actor = createActor(agentMachine, { input: { agentId } });
  actor.on('effect.requested', (effect) => effects.push(effect));
  actor.start();
  for (const event of events) actor.send(event);
  return { actor, effects };
}

/** A started agent in `state`, reached along its ROUTE_TO route. */
export function agentIn(state: AgentStateName, agentId = AGENT_ID) {
  const started = startAgent(ROUTE_TO[state], agentId);
  const reached = statePath(started.actor.getSnapshot().value);
  if (reached !== state) throw new Error(`route to ${state} ended in ${reached}`);
  return started;
}
