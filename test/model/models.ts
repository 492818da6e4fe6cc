import type { AnyMachineSnapshot, EventObject } from 'xstate';
import {
  agentMachine,
  continuationMachine,
  supervisorMachine,
  taskMachine,
  type AgentEvent,
  type ContinuationEvent,
  type MachineName,
  type SupervisorContext,
  type SupervisorEvent,
  type TaskEvent,
} from '../../machines/index.js';
import { idsOf } from '../../machines/id-set.js';
import { emptyFacts, type SchedulerFacts } from '../../src/domain/index.js';
import { ALLOW_LIST } from './coverage.js';
import type { ModelSpec } from './paths.js';

/**
 * The four models: payload events enumerated explicitly, and state serializations that keep only
 * what the guards read. Scheduler facts are event payloads, so three fact sets stand for the
 * situations the runtime can be in: nothing to do, queued input, an active task.
 */
export const FACTS_IDLE: SchedulerFacts = emptyFacts('awake_idle');
export const FACTS_QUEUED: SchedulerFacts = { ...FACTS_IDLE, queue: { queued: 1, interrupted: 0 } };
export const FACTS_TASK: SchedulerFacts = { ...FACTS_IDLE, tasks: [{ id: 'task-1', status: 'running', work_item_id: null }] };

const agentEvents: AgentEvent[] = [
  { type: 'INITIALIZE' },
  { type: 'INITIALIZE.DONE' },
  { type: 'INITIALIZE.FAILED', reason: 'bad config', recoverable: true },
  { type: 'INITIALIZE.FAILED', reason: 'bad config', recoverable: false },
  { type: 'START' },
  { type: 'STOP', reason: 'operator stop' },
  { type: 'TURN.START', runId: 'run-1', facts: FACTS_QUEUED },
  { type: 'TURN.FINISHED', runId: 'run-1', facts: FACTS_IDLE },
  { type: 'TURN.FINISHED', runId: 'run-1', facts: FACTS_TASK },
  { type: 'TURN.FINISHED', runId: 'run-0', facts: FACTS_IDLE },
  { type: 'TURN.ABORT' },
  { type: 'TASK.SETTLED', facts: FACTS_IDLE },
  { type: 'TASK.SPAWN', taskId: 'task-1', kind: 'command_task', acceptsInput: false },
  { type: 'task.finished', taskId: 'task-1', status: 'completed', exitCode: 0, reason: null },
  { type: 'IDLE', facts: FACTS_IDLE },
  { type: 'SLEEP.FAILED', reason: 'snapshot write failed' },
  { type: 'WAKE', reason: 'work arrived' },
  { type: 'WAKE.DONE' },
  { type: 'WAKE.FAILED', reason: 'checksum mismatch' },
  { type: 'WAKE.REFUSED', reason: 'incompatible schema', hint: 'migrate' },
  { type: 'RECOVER', reason: 'inconsistency' },
  { type: 'RECOVER.DONE', snapshotId: 'snap-1' },
  { type: 'RECOVER.FAILED', reason: 'no recovery point' },
  { type: 'EVOLVE', reason: 'candidate change' },
  { type: 'EVOLVE.DONE', accepted: true },
  { type: 'EVOLVE.FAILED', reason: 'rejected' },
  { type: 'TERMINATE', reason: 'operator delete' },
  { type: 'TERMINATE.DONE' },
  { type: 'TERMINATE.FAILED', phase: 'side_effects_applied', reason: 'timed out' },
];

function agentEvent<T extends AgentEvent['type']>(type: T, pick: (e: Extract<AgentEvent, { type: T }>) => boolean = () => true): Extract<AgentEvent, { type: T }> {
  const found = agentEvents.find((e): e is Extract<AgentEvent, { type: T }> => e.type === type && pick(e as Extract<AgentEvent, { type: T }>));
  if (!found) throw new Error(`no enumerated ${type}`);
  return found;
}

const valueOnly = (snapshot: AnyMachineSnapshot): string => JSON.stringify(snapshot.value);

export const agentModel: ModelSpec = {
  name: 'agent',
  machine: agentMachine,
  input: { agentId: 'agent-model' },
  events: agentEvents,
  // isStaleRun compares the event's runId with context.runId, which TURN.START always sets to
  // `run-1` here; every other guard reads only the event. So the state value is enough.
  serializeState: valueOnly,
  allowList: ALLOW_LIST.agent,
  strategy: 'shortest',
  directed: [
    {
      why: 'task.finished needs a task of this agent to finish, so the path spawns one first',
      events: [agentEvent('INITIALIZE'), agentEvent('INITIALIZE.DONE'), agentEvent('TASK.SPAWN'), agentEvent('task.finished')],
    },
    {
      why: 'TERMINATE.FAILED needs a task that outlives the terminate timeout, so the agent must be active (not created) and spawn one before TERMINATE',
      events: [agentEvent('INITIALIZE'), agentEvent('INITIALIZE.DONE'), agentEvent('TASK.SPAWN'), agentEvent('TERMINATE'), agentEvent('TERMINATE.FAILED')],
    },
  ],
};

/** The path also run over HTTP: create → sleep → wake → stop → start → terminate. */
export const agentHttpEvents: AgentEvent[] = [
  agentEvent('INITIALIZE'),
  agentEvent('INITIALIZE.DONE'),
  agentEvent('IDLE'),
  agentEvent('WAKE'),
  agentEvent('WAKE.DONE'),
  agentEvent('STOP'),
  agentEvent('START'),
  agentEvent('TERMINATE'),
  agentEvent('TERMINATE.DONE'),
];

const taskEvents: TaskEvent[] = [
  { type: 'START' },
  { type: 'EXITED', exitCode: 0 },
  { type: 'EXITED', exitCode: 3 },
  { type: 'TIMED_OUT' },
  { type: 'SPAWN_FAILED', reason: 'spawn_failed' },
  { type: 'STOP' },
  { type: 'INTERRUPT', reason: 'agent_stopped' },
  { type: 'INPUT' },
];

export const taskModel: ModelSpec = {
  name: 'task',
  machine: taskMachine,
  // Every task of the generated paths accepts input, so INPUT's guard can pass.
  input: { taskId: 'task-1', agentId: 'agent-model', kind: 'command_task', acceptsInput: true },
  events: taskEvents,
  // exitedCleanly reads the event; acceptsInput reads context.acceptsInput.
  serializeState: (snapshot) => JSON.stringify({ value: snapshot.value, acceptsInput: (snapshot.context as { acceptsInput: boolean }).acceptsInput }),
  allowList: ALLOW_LIST.task,
  strategy: 'simple',
};

const continuationEvents: ContinuationEvent[] = [
  { type: 'WAIT.SET', waitId: 'wait-1', kind: 'operator', reason: 'waiting for the operator', resource: null, workItemId: null },
  { type: 'WAIT.CANCEL' },
  { type: 'TRIGGER', trigger: { kind: 'operator_input', contentful: true }, prior: null },
  { type: 'RESOLUTION.APPLIED' },
  // One hint per disposition, in this order (cover paths take the first one that fires a branch):
  // ignored (stopped agent), coalesced (agent running a turn), triggered (idle agent, empty queue).
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'stopped', queueDepth: 0 },
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'awake_running', queueDepth: 0 },
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'awake_idle', queueDepth: 0 },
  { type: 'HINT.FLUSH' },
  { type: 'TICK.CONSUMED' },
];

export const continuationModel: ModelSpec = {
  name: 'continuation',
  machine: continuationMachine,
  input: { agentId: 'agent-model' },
  events: continuationEvents,
  // hasWait and matchedWaitingReason read context; the hint guards read the event.
  serializeState: (snapshot) => {
    const context = snapshot.context as { wait: unknown; resolution: { matched_waiting_reason?: boolean } | null };
    return JSON.stringify({ value: snapshot.value, wait: context.wait !== null, matched: context.resolution?.matched_waiting_reason === true });
  },
  allowList: ALLOW_LIST.continuation,
  strategy: 'shortest',
};

/** Agent `agent-1` fails in AGENT.FAILED paths; `agent-2` only comes and goes. */
const supervisorEvents: SupervisorEvent[] = [
  { type: 'AGENT.SPAWN', agentId: 'agent-1' },
  { type: 'AGENT.ATTACHED', agentId: 'agent-1' },
  { type: 'AGENT.ATTACHED', agentId: 'agent-2' },
  { type: 'AGENT.DETACHED', agentId: 'agent-1' },
  { type: 'AGENT.DETACHED', agentId: 'agent-2' },
  { type: 'AGENT.FAILED', agentId: 'agent-1', error: 'actor failed' },
  { type: 'xstate.error.actor.agent-1', error: new Error('boom') },
  { type: 'SHUTDOWN' },
  { type: 'DRAINED' },
];

/** The runtime's own shard input (runtime.ts shardFor). */
export const SHARD_INPUT = { shardId: 0, capacity: Number.MAX_SAFE_INTEGER };

function attachedAgents(snapshot: AnyMachineSnapshot): string[] {
  return idsOf((snapshot.context as SupervisorContext).agents);
}

export const supervisorModel: ModelSpec = {
  name: 'supervisor',
  machine: supervisorMachine,
  input: SHARD_INPUT,
  events: supervisorEvents,
  // hasCapacity and hasLiveAgents read context.live, which counts context.agents; countIn and
  // countOut read that set. (`failures` is read by no guard.)
  serializeState: (snapshot) => JSON.stringify({ value: snapshot.value, agents: attachedAgents(snapshot) }),
  allowList: ALLOW_LIST.supervisor,
  // The runtime only detaches or fails an agent it attached.
  environment: (snapshot, event: EventObject) =>
    !['AGENT.DETACHED', 'AGENT.FAILED'].includes(event.type) || ('agentId' in event && attachedAgents(snapshot).includes(String(event.agentId))),
  // An agent that throws on every event fails as soon as its actor is restored: its AGENT.FAILED
  // comes right after its AGENT.ATTACHED, and it is the only one (it fails again if attached again).
  realizable: (events) => {
    const failed = events.flatMap((e, i) => (e.type === 'AGENT.FAILED' ? [i] : []));
    if (failed.length === 0) return true;
    const [at] = failed;
    const attached = events.flatMap((e, i) => (e.type === 'AGENT.ATTACHED' && 'agentId' in e && e.agentId === 'agent-1' ? [i] : []));
    return failed.length === 1 && at !== undefined && attached.length === 1 && attached[0] === at - 1;
  },
  strategy: 'simple',
};

export const MODELS: Readonly<Record<MachineName, ModelSpec>> = {
  agent: agentModel,
  task: taskModel,
  continuation: continuationModel,
  supervisor: supervisorModel,
};
