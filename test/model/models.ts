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
import { wakeHintDisposition, type MatchedMessage } from '../../machines/contracts/index.js';
import { emptyFacts, type AgentStatus, type ClosureDecision, type SchedulerFacts } from '../../src/domain/index.js';
import { ALLOW_LIST } from './coverage.js';
import type { ModelSpec } from './paths.js';
import { idsOf } from '../../machines/id-set.js';

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

export const agentModel: ModelSpec = {
  name: 'agent',
  machine: agentMachine,
  input: { agentId: 'agent-model' },
  events: agentEvents,
  // isStaleRun compares the event's runId with context.runId, which TURN.START always sets to
  // `run-1` here; stoppedAsleep reads whether the agent was stopped asleep; every other guard
  // reads only the event. So the state value and that flag are enough.
  serializeState: (snapshot) => JSON.stringify({ value: snapshot.value, stoppedAsleep: (snapshot.context as { stoppedAsleep: boolean }).stoppedAsleep }),
  allowList: ALLOW_LIST.agent,
  // A stale finish (`run-0`) is the late finish of an aborted run: only after a TURN.ABORT.
  realizable: (events) => {
    const stale = events.findIndex((e) => e.type === 'TURN.FINISHED' && 'runId' in e && e.runId !== 'run-1');
    return stale < 0 || events.slice(0, stale).some((e) => e.type === 'TURN.ABORT');
  },
  strategy: 'shortest',
  directed: [
    {
      why: 'task.finished needs a task of this agent to finish, so the path spawns one first',
      events: [agentEvent('INITIALIZE'), agentEvent('INITIALIZE.DONE'), agentEvent('TASK.SPAWN'), agentEvent('task.finished')],
    },
    {
      why: 'a stale TURN.FINISHED is a run that ended (TURN.ABORT) finishing late while a newer run is current',
      events: [
        agentEvent('INITIALIZE'),
        agentEvent('INITIALIZE.DONE'),
        agentEvent('TURN.START'),
        agentEvent('TURN.ABORT'),
        agentEvent('START'),
        agentEvent('TURN.START'),
        agentEvent('TURN.FINISHED', (e) => e.runId !== 'run-1'),
      ],
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

/** The prior closure of a turn that ended while the agent's own wait was active (ref §4.3 row 7). */
const WAITING_FOR_CHANGE: ClosureDecision = { outcome: 'waiting', waiting_reason: 'awaiting_external_change', work_signal: null, runtime_posture: 'awake', evidence: [] };

/** What the claimed messages look like to the wait matcher: an operator prompt, a control wake hint's tick. */
const PROMPT: MatchedMessage = { kind: 'operator_prompt', origin: { kind: 'operator' }, task_id: null, metadata: {} };
const WAKE_TICK: MatchedMessage = { kind: 'system_tick', origin: { kind: 'system', subsystem: 'wake_hint' }, task_id: null, metadata: { wake_hint: { reason: 'ping', source: 'control', external_trigger_id: null } } };

const continuationEvents: ContinuationEvent[] = [
  { type: 'WAIT.SET', waitId: 'wait-1', kind: 'operator', reason: 'waiting for the operator', resource: null, workItemId: null },
  { type: 'WAIT.CANCEL' },
  // The claims: an operator prompt (its prior closure never waits for operator input here), and a
  // wake-hint tick after a turn that closed without a wait, or while the agent's wait was active.
  { type: 'TRIGGER', trigger: { kind: 'operator_input', contentful: true }, prior: null, message: PROMPT },
  { type: 'TRIGGER', trigger: { kind: 'system_tick', contentful: true }, prior: null, message: WAKE_TICK },
  { type: 'TRIGGER', trigger: { kind: 'system_tick', contentful: true }, prior: WAITING_FOR_CHANGE, message: WAKE_TICK },
  { type: 'RESOLUTION.APPLIED' },
  // One hint per disposition, in this order (cover paths take the first one that fires a branch):
  // ignored (stopped agent), coalesced (agent running a turn), triggered (idle agent, empty queue).
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'stopped', queueDepth: 0 },
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'awake_running', queueDepth: 0 },
  { type: 'WAKE_HINT', hint: { reason: 'ping', source: 'control' }, status: 'awake_idle', queueDepth: 0 },
  { type: 'HINT.FLUSH' },
  { type: 'TICK.CONSUMED' },
];

function continuationEvent(pick: (e: ContinuationEvent) => boolean): ContinuationEvent {
  const found = continuationEvents.find(pick);
  if (!found) throw new Error('no such enumerated continuation event');
  return found;
}

const isTick = (e: EventObject): boolean => e.type === 'TRIGGER' && (e as Extract<ContinuationEvent, { type: 'TRIGGER' }>).trigger.kind === 'system_tick';
const tick = (prior: ClosureDecision | null) => continuationEvent((e) => isTick(e) && (e as Extract<ContinuationEvent, { type: 'TRIGGER' }>).prior === prior);
const hint = (status: AgentStatus) => continuationEvent((e) => e.type === 'WAKE_HINT' && e.status === status);
const prompt = continuationEvent((e) => e.type === 'TRIGGER' && e.trigger.kind === 'operator_input');
const applied = continuationEvent((e) => e.type === 'RESOLUTION.APPLIED');
const consumed = continuationEvent((e) => e.type === 'TICK.CONSUMED');

/** Where the continuation driver holds its agent between steps. */
export type Posture = Extract<AgentStatus, 'awake_idle' | 'awake_running' | 'stopped'>;

/**
 * What the continuation driver (adapters/continuation.ts) can produce, replayed on the agent it
 * holds: its posture (idle, running a turn, stopped), a hint the runtime stores for after the turn
 * (`pending_wake_hint`), a queued wake-hint tick, an open wait. Only a claim starts a turn, so a
 * hint for a running agent needs a prompt first; a claim is TRIGGER and RESOLUTION.APPLIED at
 * once; ending a turn with a stored hint replays it (HINT.FLUSH); a prompt's claim resolves the
 * operator wait, which then cannot be cancelled; the runtime classifies each hint with the queue
 * it sees. A tick's claim (and so TICK.CONSUMED, and HINT.FLUSH before it) depends on the closure
 * of a turn the path does not show: those are the directed paths'.
 */
function continuationRealizable(events: readonly EventObject[]): boolean {
  let posture: Posture = 'awake_idle';
  let storedHint = false;
  let tickQueued = false;
  let openWait = false;
  const moveTo = (next: Posture): boolean => {
    if (posture === 'awake_running' && next === 'awake_idle' && storedHint) return false;
    if (next === 'stopped') storedHint = false;
    posture = next;
    return true;
  };
  for (const [i, event] of events.entries()) {
    if (isTick(event) || event.type === 'HINT.FLUSH' || event.type === 'TICK.CONSUMED') return false;
    if (event.type === 'WAIT.SET') openWait = true;
    // A wait the prompt's claim resolved is no longer the runtime's to cancel.
    if (event.type === 'WAIT.CANCEL' && !openWait) return false;
    if (event.type === 'WAIT.CANCEL') openWait = false;
    if (event.type === 'TRIGGER') {
      if (events[i + 1]?.type !== 'RESOLUTION.APPLIED' || !moveTo('awake_idle')) return false;
      posture = 'awake_running';
      openWait = false;
    }
    if (event.type === 'WAKE_HINT') {
      const { status, queueDepth } = event as Extract<ContinuationEvent, { type: 'WAKE_HINT' }>;
      if (status === 'awake_running' ? posture !== 'awake_running' : !moveTo(status as Posture)) return false;
      const disposition = wakeHintDisposition({ status, queue_depth: tickQueued ? 1 : 0 });
      if (disposition !== wakeHintDisposition({ status, queue_depth: queueDepth })) return false;
      if (disposition === 'coalesced' && !tickQueued) storedHint = true;
      if (disposition === 'triggered') tickQueued = true;
    }
  }
  return true;
}

export const continuationModel: ModelSpec = {
  name: 'continuation',
  machine: continuationMachine,
  input: { agentId: 'agent-model' },
  events: continuationEvents,
  // hasWait and triggerSatisfiesWait read context; the hint guards read the event.
  serializeState: (snapshot) => {
    const context = snapshot.context as { wait: unknown; waitSatisfied?: boolean };
    return JSON.stringify({ value: snapshot.value, wait: context.wait !== null, satisfied: context.waitSatisfied === true });
  },
  allowList: ALLOW_LIST.continuation,
  realizable: continuationRealizable,
  strategy: 'shortest',
  directed: [
    {
      why: 'a stored hint is replayed when the turn ends (HINT.FLUSH), and its tick claimed after a turn that closed without a wait',
      events: [prompt, applied, hint('awake_running'), continuationEvent((e) => e.type === 'HINT.FLUSH'), tick(null), applied, consumed],
    },
    {
      why: 'a hint while a tick is queued coalesces into it: the tick waits while a prompt, first in line, is claimed',
      events: [hint('awake_idle'), prompt, applied, hint('awake_running')],
    },
    {
      why: "a tick claimed after a turn that closed while the agent's operator wait was active is the awaited change to the closure (matched), yet it does not satisfy the operator wait: the wait stays, as its record does",
      events: [prompt, applied, continuationEvent((e) => e.type === 'WAIT.SET'), hint('awake_idle'), tick(WAITING_FOR_CHANGE), applied, consumed],
    },
  ],
};

/** Agent `agent-1` fails in AGENT.FAILED paths; `agent-2` only comes and goes. */
const supervisorEvents: SupervisorEvent[] = [
  { type: 'AGENT.ATTACHED', agentId: 'agent-1' },
  { type: 'AGENT.ATTACHED', agentId: 'agent-2' },
  { type: 'AGENT.DETACHED', agentId: 'agent-1' },
  { type: 'AGENT.DETACHED', agentId: 'agent-2' },
  { type: 'AGENT.FAILED', agentId: 'agent-1', error: 'actor failed' },
  { type: 'SHUTDOWN' },
  { type: 'DRAINED' },
];

/**
 * The shard under test, the runtime's first (runtime.ts attachToShard), opened with the runtime's
 * `shardCapacity`: one agent, so a second one is refused and goes to a shard of its own.
 */
export const SHARD_INPUT = { shardId: 0, capacity: 1 };

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
  // The runtime only detaches or fails an agent it attached; Runtime.close() detaches every agent
  // of the draining shard before it sends DRAINED.
  environment: (snapshot, event: EventObject) => {
    if (event.type === 'DRAINED') return attachedAgents(snapshot).length === 0;
    return !['AGENT.DETACHED', 'AGENT.FAILED'].includes(event.type) || ('agentId' in event && attachedAgents(snapshot).includes(String(event.agentId)));
  },
  // An agent that throws on every event fails as soon as its actor is restored: its AGENT.FAILED
  // comes right after its AGENT.ATTACHED, and it is the only one (it fails again if attached again).
  // Its restore retries then keep coming on their own, so nothing is modelled after the failure.
  // The shard itself opens with the first attach: a path starts with one.
  realizable: (events) => {
    if (events.length > 0 && events[0]?.type !== 'AGENT.ATTACHED') return false;
    const failed = events.flatMap((e, i) => (e.type === 'AGENT.FAILED' ? [i] : []));
    if (failed.length === 0) return true;
    const [at] = failed;
    const attached = events.flatMap((e, i) => (e.type === 'AGENT.ATTACHED' && 'agentId' in e && e.agentId === 'agent-1' ? [i] : []));
    return failed.length === 1 && at === events.length - 1 && attached.length === 1 && attached[0] === at - 1;
  },
  strategy: 'simple',
};

export const MODELS: Readonly<Record<MachineName, ModelSpec>> = {
  agent: agentModel,
  task: taskModel,
  continuation: continuationModel,
  supervisor: supervisorModel,
};
