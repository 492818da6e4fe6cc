import { assign, enqueueActions, setup, type SnapshotFrom } from 'xstate';
import type { AgentStatus, LifecyclePhase, SchedulerFacts, TaskKind } from '../src/domain/index.js';
import { canSleep, hasActiveTasks, hasQueuedInput } from './contracts/decision.js';
import { continuationMachine } from './continuation.machine.js';
import { taskMachine, type TaskFinishedNotice } from './task.machine.js';

/**
 * The agent lifecycle: seed-002 phases carrying seed-000 AgentStatus labels (DESIGN.md table).
 * Transitional states (initializing, waking, recovering, evolving, terminating) request their side
 * effects with `effect.requested` and wait for the runtime's `*.DONE` / `*.FAILED` answer.
 */
export interface AgentInput {
  agentId: string;
}

export type AgentEffect = 'initialize' | 'sleep' | 'wake' | 'recover' | 'evolve' | 'terminate' | 'stop';

export interface AgentFailure {
  phase: string;
  reason: string;
}

export interface AgentContext extends AgentInput {
  runId: string | null;
  /** Counts effect requests, so every request has its own idempotency key without randomness. */
  epoch: number;
  /** The label shown while recovering: the one the agent had before (DESIGN.md). */
  statusBeforeRecovery: AgentStatus;
  failure: AgentFailure | null;
  refusal: { reason: string; hint: string } | null;
  /**
   * In `stopped`: it was stopped asleep, so Start hands it back asleep and it becomes Active only
   * through Waking and its checks (seed 002: Active only over a verified recovery point; scenario
   * 4), never around them. False everywhere else (`stopped` clears it on exit).
   */
  stoppedAsleep: boolean;
}

type WithFacts = { facts: SchedulerFacts };

export type AgentEvent =
  | { type: 'INITIALIZE' }
  | { type: 'INITIALIZE.DONE' }
  | { type: 'INITIALIZE.FAILED'; reason: string; recoverable: boolean }
  | { type: 'START' }
  | { type: 'STOP'; reason: string }
  | ({ type: 'TURN.START'; runId: string } & WithFacts)
  | ({ type: 'TURN.FINISHED'; runId: string } & WithFacts)
  | { type: 'TURN.ABORT' }
  | ({ type: 'TASK.SETTLED' } & WithFacts)
  | { type: 'TASK.SPAWN'; taskId: string; kind: TaskKind; acceptsInput: boolean }
  | TaskFinishedNotice
  | ({ type: 'IDLE' } & WithFacts)
  | { type: 'SLEEP.DONE' }
  | { type: 'SLEEP.FAILED'; reason: string }
  | { type: 'WAKE'; reason: string }
  | { type: 'WAKE.DONE' }
  | { type: 'WAKE.FAILED'; reason: string }
  | { type: 'WAKE.REFUSED'; reason: string; hint: string }
  | { type: 'RECOVER'; reason: string }
  | { type: 'RECOVER.DONE'; snapshotId: string }
  | { type: 'RECOVER.FAILED'; reason: string }
  | { type: 'EVOLVE'; reason: string }
  | { type: 'EVOLVE.DONE'; accepted: boolean }
  | { type: 'EVOLVE.FAILED'; reason: string }
  | { type: 'TERMINATE'; reason: string }
  | { type: 'TERMINATE.DONE' }
  | { type: 'TERMINATE.FAILED'; phase: string; reason: string };

export type AgentEmitted = { type: 'effect.requested'; effect: AgentEffect; key: string };

/** Labels of a state node (DESIGN.md table); `status: null` means "the previous label". */
export interface AgentStateMeta {
  phase: LifecyclePhase;
  status: AgentStatus | null;
}

function meta(phase: LifecyclePhase, status: AgentStatus | null): { meta: AgentStateMeta } {
  return { meta: { phase, status } };
}

function request(effect: AgentEffect) {
  return { type: 'requestEffect' as const, params: { effect } };
}

type NamedAction =
  | { type: 'enterRecovery'; params: { status: AgentStatus } }
  | { type: 'recordFailure'; params: { phase: string } }
  | 'clearRun';

/** Any phase may enter Recovering on a detected inconsistency (seed 002); it remembers the label it had. */
function recoverFrom(status: AgentStatus, ...before: NamedAction[]) {
  return { target: '#agent.recovering', actions: [...before, { type: 'enterRecovery' as const, params: { status } }] };
}

function failWith(phase: string): NamedAction {
  return { type: 'recordFailure', params: { phase } };
}

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    input: {} as AgentInput,
    events: {} as AgentEvent,
    emitted: {} as AgentEmitted,
  },
  actors: { task: taskMachine, continuation: continuationMachine },
  guards: {
    hasQueuedInput: ({ event }) => 'facts' in event && hasQueuedInput(event.facts),
    canSleep: ({ event }) => 'facts' in event && canSleep(event.facts),
    isStaleRun: ({ context, event }) => event.type === 'TURN.FINISHED' && event.runId !== context.runId,
    hasActiveTasks: ({ event }) => 'facts' in event && hasActiveTasks(event.facts),
    noActiveTasks: ({ event }) => 'facts' in event && !hasActiveTasks(event.facts),
    isRecoverableFailure: ({ event }) => event.type === 'INITIALIZE.FAILED' && event.recoverable,
    hasVerifiedRecoveryPoint: ({ event }) => event.type === 'RECOVER.DONE' && event.snapshotId.length > 0,
    stoppedAsleep: ({ context }) => context.stoppedAsleep,
  },
  actions: {
    requestEffect: enqueueActions(({ context, enqueue }, params: { effect: AgentEffect }) => {
      const epoch = context.epoch + 1;
      enqueue.assign({ epoch });
      enqueue.emit({ type: 'effect.requested', effect: params.effect, key: `${context.agentId}:${params.effect}:${epoch}` });
    }),
    spawnContinuation: enqueueActions(({ context, enqueue }) => {
      enqueue.spawnChild('continuation', { id: 'continuation', input: { agentId: context.agentId } });
    }),
    spawnTask: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'TASK.SPAWN') return;
      enqueue.spawnChild('task', {
        id: event.taskId,
        input: { taskId: event.taskId, agentId: context.agentId, kind: event.kind, acceptsInput: event.acceptsInput },
      });
    }),
    stopFinishedTask: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'task.finished') enqueue.stopChild(event.taskId);
    }),
    assignRun: assign({ runId: ({ event }) => (event.type === 'TURN.START' ? event.runId : null) }),
    clearRun: assign({ runId: null }),
    enterRecovery: assign((_, params: { status: AgentStatus }) => ({ statusBeforeRecovery: params.status })),
    recordFailure: assign({
      failure: ({ event }, params: { phase: string }) => ({
        phase: event.type === 'TERMINATE.FAILED' ? event.phase : params.phase,
        reason: 'reason' in event && typeof event.reason === 'string' ? event.reason : event.type,
      }),
    }),
    clearFailure: assign({ failure: null, refusal: null }),
    rememberSleep: assign({ stoppedAsleep: true }),
    forgetSleep: assign({ stoppedAsleep: false }),
    recordRefusal: assign({
      refusal: ({ event }) => (event.type === 'WAKE.REFUSED' ? { reason: event.reason, hint: event.hint } : null),
    }),
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    agentId: input.agentId,
    runId: null,
    epoch: 0,
    statusBeforeRecovery: 'booting',
    failure: null,
    refusal: null,
    stoppedAsleep: false,
  }),
  initial: 'created',
  entry: 'spawnContinuation',
  on: {
    'task.finished': { actions: 'stopFinishedTask' },
  },
  states: {
    created: {
      ...meta('created', 'booting'),
      on: {
        INITIALIZE: 'initializing',
        RECOVER: recoverFrom('booting'),
        TERMINATE: 'terminating',
      },
    },
    initializing: {
      ...meta('initializing', 'booting'),
      entry: request('initialize'),
      on: {
        'INITIALIZE.DONE': { target: 'active', actions: 'clearFailure' },
        RECOVER: recoverFrom('booting'),
        'INITIALIZE.FAILED': [
          { guard: 'isRecoverableFailure', ...recoverFrom('booting', failWith('initializing')) },
          // An unrecoverable configuration error keeps the agent Created, with the reason saved (seed 002).
          { target: 'created', actions: failWith('initializing') },
        ],
      },
    },
    active: {
      initial: 'awakeIdle',
      on: {
        'TASK.SPAWN': { actions: 'spawnTask' },
        STOP: { target: 'stopped', actions: 'clearRun' },
        TERMINATE: { target: 'terminating', actions: 'clearRun' },
      },
      states: {
        awakeIdle: {
          ...meta('active', 'awake_idle'),
          on: {
            'TURN.START': { guard: 'hasQueuedInput', target: 'awakeRunning', actions: 'assignRun' },
            IDLE: { guard: 'canSleep', target: '#agent.sleeping' },
            EVOLVE: '#agent.evolving',
            RECOVER: recoverFrom('awake_idle'),
          },
        },
        awakeRunning: {
          ...meta('active', 'awake_running'),
          on: {
            'TURN.FINISHED': [
              // A finish for another run id is stale (a run that ended, finishing late): ignored.
              { guard: 'isStaleRun' },
              { guard: 'hasActiveTasks', target: 'awaitingTask', actions: 'clearRun' },
              { target: 'awakeIdle', actions: 'clearRun' },
            ],
            // The abort route ends the run and leaves the agent stopped.
            'TURN.ABORT': { target: '#agent.stopped', actions: 'clearRun' },
            RECOVER: recoverFrom('awake_running', 'clearRun'),
          },
        },
        awaitingTask: {
          ...meta('active', 'awaiting_task'),
          on: {
            'TURN.START': { guard: 'hasQueuedInput', target: 'awakeRunning', actions: 'assignRun' },
            // Every task end sends TASK.SETTLED with the facts it leaves: the only way back to idle.
            'TASK.SETTLED': { guard: 'noActiveTasks', target: 'awakeIdle' },
            RECOVER: recoverFrom('awaiting_task'),
          },
        },
      },
    },
    sleeping: {
      ...meta('sleeping', 'asleep'),
      entry: request('sleep'),
      on: {
        WAKE: 'waking',
        'SLEEP.FAILED': recoverFrom('asleep', failWith('sleeping')),
        STOP: { target: 'stopped', actions: 'rememberSleep' },
        TERMINATE: 'terminating',
        RECOVER: recoverFrom('asleep'),
      },
    },
    waking: {
      ...meta('waking', 'asleep'),
      entry: request('wake'),
      on: {
        'WAKE.DONE': { target: 'active', actions: 'clearFailure' },
        // A corrupted snapshot or torn file: never Active on unverified state.
        'WAKE.FAILED': recoverFrom('asleep', failWith('waking')),
        // An incompatible schema refuses Active and stays asleep until migrated or rolled back.
        'WAKE.REFUSED': { target: 'sleeping', actions: 'recordRefusal' },
        RECOVER: recoverFrom('asleep'),
      },
    },
    recovering: {
      ...meta('recovering', null),
      entry: request('recover'),
      on: {
        'RECOVER.DONE': { guard: 'hasVerifiedRecoveryPoint', target: 'active', actions: 'clearFailure' },
        'RECOVER.FAILED': { actions: failWith('recovering') },
        TERMINATE: 'terminating',
      },
    },
    evolving: {
      ...meta('evolving', 'awake_idle'),
      entry: request('evolve'),
      on: {
        'EVOLVE.DONE': 'active',
        RECOVER: recoverFrom('awake_idle'),
        'EVOLVE.FAILED': recoverFrom('awake_idle', failWith('evolving')),
      },
    },
    stopped: {
      ...meta('active', 'stopped'),
      entry: request('stop'),
      // The flag lives only here: guards are read before exit actions run.
      exit: 'forgetSleep',
      on: {
        // Back to sleep when it was stopped asleep: the scheduler wakes it through Waking.
        START: [{ guard: 'stoppedAsleep', target: 'sleeping' }, { target: 'active' }],
        TERMINATE: 'terminating',
        RECOVER: recoverFrom('stopped'),
      },
    },
    terminating: {
      ...meta('terminating', 'stopped'),
      entry: request('terminate'),
      on: {
        'TERMINATE.DONE': 'terminated',
        RECOVER: recoverFrom('stopped'),
        // A side effect that failed or timed out: diagnosable, never a success mark (seed 002 scenario 5).
        'TERMINATE.FAILED': recoverFrom('stopped', failWith('terminating')),
      },
    },
    terminated: {
      ...meta('terminated', 'stopped'),
      type: 'final',
    },
  },
});

export type AgentSnapshot = SnapshotFrom<typeof agentMachine>;

/** The (phase, AgentStatus) pair of an agent snapshot, as DESIGN.md's table maps them. */
export function agentLabels(snapshot: AgentSnapshot): { phase: LifecyclePhase; status: AgentStatus } {
  const metas = Object.values(snapshot.getMeta()) as AgentStateMeta[];
  // The deepest state node carries the labels; parents like `active` have none.
  const leaf = metas[metas.length - 1];
  if (!leaf) throw new Error(`agent state ${JSON.stringify(snapshot.value)} has no labels`);
  return { phase: leaf.phase, status: leaf.status ?? snapshot.context.statusBeforeRecovery };
}
