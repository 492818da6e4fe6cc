import type { AnyMachineSnapshot, EventObject, StateValue } from 'xstate';
import type { AgentContext, ContinuationContext, ContinuationEvent, MachineName, SupervisorContext } from '../../../machines/index.js';
import { deriveClosure } from '../../../machines/contracts/index.js';
import { waitMatchesMessage, type MatchedMessage } from '../../../machines/contracts/index.js';
import { MessageKind, TRIGGER_KIND_OF, WaitConditionKind, type ClosureDecision, type ContinuationTriggerKind, type MessageOrigin, type SchedulerFacts } from '../../../src/domain/index.js';
import { FACTS_IDLE, MODELS } from '../../model/models.js';
import type { ModelSpec } from '../../model/paths.js';

/**
 * What liveness means for each machine, read from the seeds. The events and payloads are the model
 * tests' (`test/model/models.ts`), so the proofs and the generated path tests explore the same
 * graph; the one dimension they do not vary, the kind of a continuation wait, is added here from
 * the domain's own enums (every `WaitConditionKind`, with the claims of every `MessageKind` that
 * the seed-003 wait matcher lets end it).
 */

/** A set of states, by a predicate over snapshots, with the label reports use. */
export interface StateMatch {
  label: string;
  holds: (snapshot: AnyMachineSnapshot) => boolean;
}

/** One edge a waiting state must have. */
export interface EdgeRule {
  /** What the edge is for: the trigger that ends the wait, or a way out the seeds give. */
  role: 'trigger' | 'stop' | 'cancel' | 'timeout' | 'failure' | 'interrupt' | 'terminate' | 'override';
  event: string;
  /** Among the enumerated events of this type, the ones that count (a payload filter). */
  pick?: (event: EventObject) => boolean;
  to: StateMatch;
  /** A follow-up the target must take at once (the continuation resolves, then applies). */
  then?: { event: string; to: StateMatch };
  /** Where a seed asks for the edge. */
  seed: string;
}

export interface WaitingState {
  /** `sleeping`, `wait.waiting(task, agent-level)` ... */
  label: string;
  holds: (snapshot: AnyMachineSnapshot) => boolean;
  edges: EdgeRule[];
}

export interface LivenessSpec {
  name: MachineName;
  model: ModelSpec;
  /** Events beyond the model's (derived payload variants); the model's come first. */
  extraEvents?: readonly EventObject[];
  /** Extends the model's serialization with what the waiting states tell apart. */
  serializeState?: (snapshot: AnyMachineSnapshot) => string;
  rest: StateMatch;
  waiting: WaitingState[];
  /** Agent only: from every non-final state, a state that accepts this event can be reached. */
  alwaysReachable?: { label: string; accepts: EventObject['type']; orIn: StateMatch };
}

export function at(value: StateValue, label = typeof value === 'string' ? value : JSON.stringify(value)): StateMatch {
  return { label, holds: (snapshot) => snapshot.matches(value as never) };
}

function anyOf(...matches: StateMatch[]): StateMatch {
  return { label: matches.map((m) => m.label).join(' | '), holds: (s) => matches.some((m) => m.holds(s)) };
}

const final: StateMatch = { label: 'a final state', holds: (s) => s.status === 'done' };

// ---------------------------------------------------------------- agent (seeds 000, 002)

const STOP = (to = at('stopped')): EdgeRule => ({ role: 'stop', event: 'STOP', to, seed: '000 Stop aborts the run and marks the agent not runnable' });
const TERMINATE: EdgeRule = { role: 'terminate', event: 'TERMINATE', to: at('terminating'), seed: '002 Sleeping/Stopped: wake, terminate or recover' };

const stoppedAsleep = (s: AnyMachineSnapshot) => (s.context as AgentContext).stoppedAsleep;

const agent: LivenessSpec = {
  name: 'agent',
  model: MODELS.agent,
  rest: anyOf(at('sleeping', 'sleeping (asleep)'), at({ active: 'awakeIdle' }, 'active.awakeIdle')),
  alwaysReachable: { label: 'Stop', accepts: 'STOP', orIn: at('stopped') },
  waiting: [
    {
      label: 'active.awakeRunning (the turn)',
      holds: at({ active: 'awakeRunning' }).holds,
      edges: [
        { role: 'trigger', event: 'TURN.FINISHED', to: anyOf(at({ active: 'awakeIdle' }), at({ active: 'awaitingTask' })), seed: '000 turn closure → AwakeIdle' },
        STOP(),
        { role: 'cancel', event: 'TURN.ABORT', to: at('stopped'), seed: '000 Stop aborts the current run (current-run/abort)' },
      ],
    },
    {
      label: 'active.awaitingTask (task)',
      holds: at({ active: 'awaitingTask' }).holds,
      edges: [
        { role: 'trigger', event: 'TASK.SETTLED', to: at({ active: 'awakeIdle' }), seed: '000 AwaitingTask → task result' },
        STOP(),
        { role: 'override', event: 'TURN.START', to: at({ active: 'awakeRunning' }), seed: '003 ResumeOverride: operator input overrides the wait' },
      ],
    },
    {
      label: 'sleeping (a wake)',
      holds: at('sleeping').holds,
      edges: [{ role: 'trigger', event: 'WAKE', to: at('waking'), seed: '002 Sleeping → Waking' }, STOP(), TERMINATE],
    },
    {
      label: 'stopped (Start)',
      holds: (s) => s.matches('stopped') && !stoppedAsleep(s),
      edges: [{ role: 'trigger', event: 'START', to: at('active'), seed: '000 Start hands the agent to the scheduler' }, TERMINATE],
    },
    {
      label: 'stopped asleep (Start)',
      holds: (s) => s.matches('stopped') && stoppedAsleep(s),
      edges: [{ role: 'trigger', event: 'START', to: at('sleeping'), seed: '000 Start hands it to the scheduler; 002 it wakes through Waking' }, TERMINATE],
    },
    {
      label: 'initializing (its effect)',
      holds: at('initializing').holds,
      edges: [
        { role: 'trigger', event: 'INITIALIZE.DONE', to: at('active'), seed: '002 Initializing → Active' },
        { role: 'failure', event: 'INITIALIZE.FAILED', to: anyOf(at('recovering'), at('created')), seed: '002 a failed init: Recovering, or stays Created' },
      ],
    },
    {
      label: 'waking (its effect)',
      holds: at('waking').holds,
      edges: [
        { role: 'trigger', event: 'WAKE.DONE', to: at('active'), seed: '002 Waking → Active' },
        { role: 'failure', event: 'WAKE.FAILED', to: at('recovering'), seed: '002 Waking → Recovering' },
        { role: 'cancel', event: 'WAKE.REFUSED', to: at('sleeping'), seed: '002 scenario 4: incompatible schema refuses Active' },
      ],
    },
    {
      label: 'recovering (its effect)',
      holds: at('recovering').holds,
      edges: [
        { role: 'trigger', event: 'RECOVER.DONE', to: at('active'), seed: '002 recovered' },
        { role: 'terminate', event: 'TERMINATE', to: at('terminating'), seed: '002 Recovering: recovered, degraded or terminated' },
      ],
    },
    {
      label: 'evolving (its effect)',
      holds: at('evolving').holds,
      edges: [
        { role: 'trigger', event: 'EVOLVE.DONE', to: at('active'), seed: '002 Evolving → Active' },
        { role: 'failure', event: 'EVOLVE.FAILED', to: at('recovering'), seed: '002 Evolving → Recovering' },
      ],
    },
    {
      label: 'terminating (its effect)',
      holds: at('terminating').holds,
      edges: [
        { role: 'trigger', event: 'TERMINATE.DONE', to: at('terminated'), seed: '002 termination committed' },
        { role: 'timeout', event: 'TERMINATE.FAILED', to: at('recovering'), seed: '002 scenario 5: a timeout leaves a diagnosable state' },
      ],
    },
  ],
};

// ---------------------------------------------------------------- task (seed 004)

const task: LivenessSpec = {
  name: 'task',
  model: MODELS.task,
  rest: { label: 'a terminal state', holds: final.holds },
  waiting: [
    {
      label: 'queued (its launch)',
      holds: at('queued').holds,
      edges: [
        { role: 'trigger', event: 'START', to: at('running'), seed: '004 Queued → Running' },
        { role: 'cancel', event: 'STOP', to: at('cancelled'), seed: '004 TaskStop' },
        { role: 'interrupt', event: 'INTERRUPT', to: at('interrupted'), seed: '004 Interrupted (the runtime stopped or died)' },
      ],
    },
    {
      label: 'running (its process)',
      holds: at('running').holds,
      edges: [
        { role: 'trigger', event: 'EXITED', to: anyOf(at('completed'), at('failed')), seed: '004 Running → Completed | Failed' },
        { role: 'timeout', event: 'TIMED_OUT', to: at('failed'), seed: '004 Failed (timeout_ms)' },
        { role: 'cancel', event: 'STOP', to: at('cancelling'), seed: '004 TaskStop: Running → Cancelling' },
        { role: 'interrupt', event: 'INTERRUPT', to: at('interrupted'), seed: '004 Interrupted' },
      ],
    },
    {
      label: 'cancelling (the process to end)',
      holds: at('cancelling').holds,
      edges: [
        { role: 'trigger', event: 'EXITED', to: at('cancelled'), seed: '004 Cancelling → Cancelled' },
        { role: 'interrupt', event: 'INTERRUPT', to: at('interrupted'), seed: '004 Interrupted' },
      ],
    },
  ],
};

// ---------------------------------------------------------------- continuation (seed 003)

type WaitSet = Extract<ContinuationEvent, { type: 'WAIT.SET' }>;
type Trigger = Extract<ContinuationEvent, { type: 'TRIGGER' }>;

/** Where a wait is held: the agent's own, or one bound to the current work item. */
const SCOPES = ['agent', 'work_item'] as const;
type Scope = (typeof SCOPES)[number];

/** The closure of a turn that ended with one active wait of `kind` in `scope`: the `prior` of the next trigger. */
export function closureWith(kind: WaitConditionKind, scope: Scope): ClosureDecision {
  const workItem = { id: 'wi-1', state: 'open' as const, plan_status: 'draft' as const, blocked_by: null, revision: 1, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' };
  const facts: SchedulerFacts = {
    ...FACTS_IDLE,
    turn_index: 1,
    last_turn_terminal: 'completed',
    ...(scope === 'work_item' ? { current_work_item_id: workItem.id, work_items: [workItem] } : {}),
    waits: [{ id: 'wait-1', kind, status: 'active', work_item_id: scope === 'work_item' ? workItem.id : null, subject_ref: null }],
    active_timers: kind === 'timer' ? 1 : 0,
  };
  return deriveClosure(facts);
}

/** One message of each kind that carries a trigger, with the origin the runtime gives it. */
const ORIGINS: Readonly<Record<MessageKind, MessageOrigin>> = {
  operator_prompt: { kind: 'operator' },
  channel_event: { kind: 'channel', channel_id: 'http' },
  webhook_event: { kind: 'webhook', source: 'http' },
  callback_event: { kind: 'callback', descriptor_id: 'trg-1' },
  timer_tick: { kind: 'timer', timer_id: 'tmr-1' },
  system_tick: { kind: 'system', subsystem: 'wake_hint' },
  task_result: { kind: 'task', task_id: 'task-1' },
  task_status: { kind: 'task', task_id: 'task-1' },
  control: { kind: 'operator' },
  internal_followup: { kind: 'system', subsystem: 'tool_enqueue' },
};

export const CLAIMABLE: ReadonlyArray<{ kind: MessageKind; trigger: ContinuationTriggerKind; message: MatchedMessage }> = MessageKind.options.flatMap((kind) => {
  const trigger = TRIGGER_KIND_OF[kind];
  return trigger ? [{ kind, trigger, message: { kind, origin: ORIGINS[kind], task_id: kind === 'task_result' ? 'task-1' : null, metadata: {} } }] : [];
});

/** The claims whose message satisfies a wait of `kind` that names no resource (the seed-003 wait matcher). */
export function matchingClaims(kind: WaitConditionKind): typeof CLAIMABLE {
  return CLAIMABLE.filter((claim) => waitMatchesMessage({ kind, subject_ref: null }, claim.message));
}

const template = MODELS.continuation.events.find((e): e is WaitSet => e.type === 'WAIT.SET');
if (!template) throw new Error('the continuation model enumerates no WAIT.SET');

const waitVariants = WaitConditionKind.options.flatMap((kind) =>
  SCOPES.map((scope) => {
    const prior = closureWith(kind, scope);
    const set: WaitSet = { ...template, kind, workItemId: scope === 'work_item' ? 'wi-1' : null };
    const triggers: Trigger[] = matchingClaims(kind).map((claim) => ({ type: 'TRIGGER', trigger: { kind: claim.trigger, contentful: true, task_terminal: true, same_work_item: true }, prior, message: claim.message }));
    return { kind, scope, set, triggers };
  }),
);

const waitOf = (snapshot: AnyMachineSnapshot) => (snapshot.context as ContinuationContext).wait;
const idle = at({ wait: 'idle' }, 'wait.idle');

const continuation: LivenessSpec = {
  name: 'continuation',
  model: MODELS.continuation,
  extraEvents: waitVariants.flatMap((v) => [v.set, ...v.triggers]),
  // The model tells waits apart only by presence; the per-kind rows need the kind and scope too.
  serializeState: (snapshot) => {
    const wait = waitOf(snapshot);
    return `${MODELS.continuation.serializeState(snapshot)}|${wait ? `${wait.kind}:${wait.workItemId ? 'work_item' : 'agent'}` : '-'}`;
  },
  rest: { label: 'wait.idle + wakeHint.clear', holds: (s) => s.matches({ wait: 'idle', wakeHint: 'clear' } as never) },
  waiting: [
    ...waitVariants.map(({ kind, scope, triggers }) => ({
      label: `wait.waiting (${kind}, ${scope === 'agent' ? 'agent-level' : 'work item'})`,
      holds: (s: AnyMachineSnapshot) => s.matches({ wait: 'waiting' } as never) && waitOf(s)?.kind === kind && (waitOf(s)?.workItemId !== null) === (scope === 'work_item'),
      edges: [
        {
          role: 'trigger' as const,
          event: 'TRIGGER',
          pick: (e: EventObject) => triggers.some((t) => JSON.stringify(t) === JSON.stringify(e)),
          to: at({ wait: 'resolving' }, 'wait.resolving'),
          then: { event: 'RESOLUTION.APPLIED', to: idle },
          seed: `003 a trigger whose message satisfies the wait (${triggers.map((t) => t.message.kind).join(', ') || 'none'}) resumes it`,
        },
        { role: 'cancel' as const, event: 'WAIT.CANCEL', to: idle, seed: '003 a wait is cancelled (operator cancel, work item completed)' },
      ],
    })),
    {
      label: 'wait.resolving (its application)',
      holds: at({ wait: 'resolving' }).holds,
      edges: [{ role: 'trigger', event: 'RESOLUTION.APPLIED', to: anyOf(idle, at({ wait: 'waiting' })), seed: '003 ContinuationResolution applied' }],
    },
    {
      label: 'wakeHint.stored (the turn to end)',
      holds: at({ wakeHint: 'stored' }).holds,
      edges: [{ role: 'trigger', event: 'HINT.FLUSH', to: at({ wakeHint: 'pending' }), seed: '003 a stored PendingWakeHint is replayed' }],
    },
    {
      label: 'wakeHint.pending (its tick)',
      holds: at({ wakeHint: 'pending' }).holds,
      edges: [{ role: 'trigger', event: 'TICK.CONSUMED', to: at({ wakeHint: 'clear' }), seed: '003 WakeHint → EmitSystemTick, consumed once' }],
    },
  ],
};

// ---------------------------------------------------------------- supervisor

const supervisor: LivenessSpec = {
  name: 'supervisor',
  model: MODELS.supervisor,
  // A shard's rest is its end: whatever it holds, it can always be drained and stopped.
  rest: { label: 'stopped (drained)', holds: at('stopped').holds },
  waiting: [
    {
      label: 'draining, agents left (their detach)',
      holds: (s) => s.matches('draining') && (s.context as SupervisorContext).live > 0,
      edges: [{ role: 'trigger', event: 'AGENT.DETACHED', to: at('draining'), seed: 'DESIGN: Runtime.close() detaches every live agent' }],
    },
    {
      label: 'draining, empty (DRAINED)',
      holds: (s) => s.matches('draining') && (s.context as SupervisorContext).live === 0,
      edges: [{ role: 'trigger', event: 'DRAINED', to: at('stopped'), seed: 'DESIGN: then the shard stops' }],
    },
  ],
};

export const LIVENESS: readonly LivenessSpec[] = [agent, task, continuation, supervisor];
