import type { AgentEvent } from '../../machines/agent.machine.js';
import { NOTHING, QUEUED, RUN_ID, WITH_TASK } from './fixtures.js';
import type { AgentStateName } from './fixtures.js';

/**
 * One sample per agent event type, and one per guard outcome where a guard reads the payload. The legal table
 * below and the refusal matrix (agent-refusals.test.ts) both draw from it, so together they state the whole
 * transition function over these samples.
 */
export const SAMPLES = {
  INITIALIZE: { type: 'INITIALIZE' },
  'INITIALIZE.DONE': { type: 'INITIALIZE.DONE' },
  'INITIALIZE.FAILED recoverable': { type: 'INITIALIZE.FAILED', reason: 'store unreachable', recoverable: true },
  'INITIALIZE.FAILED unrecoverable': { type: 'INITIALIZE.FAILED', reason: 'bad config', recoverable: false },
  START: { type: 'START' },
  STOP: { type: 'STOP', reason: 'operator' },
  'TURN.START queued input': { type: 'TURN.START', runId: 'run-2', facts: QUEUED },
  'TURN.START empty queue': { type: 'TURN.START', runId: 'run-2', facts: NOTHING },
  'TURN.FINISHED own run, nothing left': { type: 'TURN.FINISHED', runId: RUN_ID, facts: NOTHING },
  'TURN.FINISHED own run, active task': { type: 'TURN.FINISHED', runId: RUN_ID, facts: WITH_TASK },
  'TURN.FINISHED stale run': { type: 'TURN.FINISHED', runId: 'run-0', facts: NOTHING },
  'TURN.ABORT': { type: 'TURN.ABORT' },
  'TASK.SETTLED no active task': { type: 'TASK.SETTLED', facts: NOTHING },
  'TASK.SETTLED active task': { type: 'TASK.SETTLED', facts: WITH_TASK },
  'TASK.SPAWN': { type: 'TASK.SPAWN', taskId: 't9', kind: 'command_task', acceptsInput: false },
  'task.finished': { type: 'task.finished', taskId: 't9', status: 'completed', exitCode: 0, reason: null },
  'IDLE nothing pending': { type: 'IDLE', facts: NOTHING },
  'IDLE queued input': { type: 'IDLE', facts: QUEUED },
  'IDLE active task': { type: 'IDLE', facts: WITH_TASK },
  'SLEEP.DONE': { type: 'SLEEP.DONE' },
  'SLEEP.FAILED': { type: 'SLEEP.FAILED', reason: 'persist failed' },
  WAKE: { type: 'WAKE', reason: 'operator message' },
  'WAKE.DONE': { type: 'WAKE.DONE' },
  'WAKE.FAILED': { type: 'WAKE.FAILED', reason: 'checksum mismatch' },
  'WAKE.REFUSED': { type: 'WAKE.REFUSED', reason: 'schema_version 3 unsupported', hint: 'migrate to 4' },
  RECOVER: { type: 'RECOVER', reason: 'lease lost' },
  'RECOVER.DONE with snapshot': { type: 'RECOVER.DONE', snapshotId: 'snap-7' },
  'RECOVER.DONE without snapshot': { type: 'RECOVER.DONE', snapshotId: '' },
  'RECOVER.FAILED': { type: 'RECOVER.FAILED', reason: 'no verified point' },
  EVOLVE: { type: 'EVOLVE', reason: 'candidate change' },
  'EVOLVE.DONE accepted': { type: 'EVOLVE.DONE', accepted: true },
  'EVOLVE.DONE rejected': { type: 'EVOLVE.DONE', accepted: false },
  'EVOLVE.FAILED': { type: 'EVOLVE.FAILED', reason: 'regression' },
  TERMINATE: { type: 'TERMINATE', reason: 'retired' },
  'TERMINATE.DONE': { type: 'TERMINATE.DONE' },
  'TERMINATE.FAILED': { type: 'TERMINATE.FAILED', phase: 'revoke_lease', reason: 'timeout' },
} as const satisfies Record<string, AgentEvent>;

export type SampleName = keyof typeof SAMPLES;
export const SAMPLE_NAMES = Object.keys(SAMPLES) as SampleName[];

export interface AgentTransition {
  from: AgentStateName;
  sample: SampleName;
  to: AgentStateName;
}

const ACTIVE_LEAVES = ['active.awakeIdle', 'active.awakeRunning', 'active.awaitingTask'] as const;

/** Every legal transition of the agent machine, including the ones that stay (stale finish, failed recovery). */
export const LEGAL: readonly AgentTransition[] = [
  { from: 'created', sample: 'INITIALIZE', to: 'initializing' },
  { from: 'created', sample: 'RECOVER', to: 'recovering' },
  { from: 'created', sample: 'TERMINATE', to: 'terminating' },

  { from: 'initializing', sample: 'INITIALIZE.DONE', to: 'active.awakeIdle' },
  { from: 'initializing', sample: 'RECOVER', to: 'recovering' },
  { from: 'initializing', sample: 'INITIALIZE.FAILED recoverable', to: 'recovering' },
  { from: 'initializing', sample: 'INITIALIZE.FAILED unrecoverable', to: 'created' },

  ...ACTIVE_LEAVES.flatMap((from): AgentTransition[] => [
    { from, sample: 'STOP', to: 'stopped' },
    { from, sample: 'TERMINATE', to: 'terminating' },
    { from, sample: 'RECOVER', to: 'recovering' },
  ]),
  { from: 'active.awakeIdle', sample: 'TURN.START queued input', to: 'active.awakeRunning' },
  { from: 'active.awakeIdle', sample: 'IDLE nothing pending', to: 'sleeping' },
  { from: 'active.awakeIdle', sample: 'EVOLVE', to: 'evolving' },

  { from: 'active.awakeRunning', sample: 'TURN.FINISHED own run, nothing left', to: 'active.awakeIdle' },
  { from: 'active.awakeRunning', sample: 'TURN.FINISHED own run, active task', to: 'active.awaitingTask' },
  { from: 'active.awakeRunning', sample: 'TURN.FINISHED stale run', to: 'active.awakeRunning' },
  { from: 'active.awakeRunning', sample: 'TURN.ABORT', to: 'stopped' },

  { from: 'active.awaitingTask', sample: 'TURN.START queued input', to: 'active.awakeRunning' },
  { from: 'active.awaitingTask', sample: 'TASK.SETTLED no active task', to: 'active.awakeIdle' },

  { from: 'sleeping', sample: 'WAKE', to: 'waking' },
  { from: 'sleeping', sample: 'SLEEP.FAILED', to: 'recovering' },
  { from: 'sleeping', sample: 'STOP', to: 'stopped' },
  { from: 'sleeping', sample: 'TERMINATE', to: 'terminating' },
  { from: 'sleeping', sample: 'RECOVER', to: 'recovering' },

  { from: 'waking', sample: 'WAKE.DONE', to: 'active.awakeIdle' },
  { from: 'waking', sample: 'WAKE.FAILED', to: 'recovering' },
  { from: 'waking', sample: 'WAKE.REFUSED', to: 'sleeping' },
  { from: 'waking', sample: 'RECOVER', to: 'recovering' },

  { from: 'recovering', sample: 'RECOVER.DONE with snapshot', to: 'active.awakeIdle' },
  { from: 'recovering', sample: 'RECOVER.FAILED', to: 'recovering' },
  { from: 'recovering', sample: 'TERMINATE', to: 'terminating' },

  { from: 'evolving', sample: 'EVOLVE.DONE accepted', to: 'active.awakeIdle' },
  { from: 'evolving', sample: 'EVOLVE.DONE rejected', to: 'active.awakeIdle' },
  { from: 'evolving', sample: 'RECOVER', to: 'recovering' },
  { from: 'evolving', sample: 'EVOLVE.FAILED', to: 'recovering' },

  { from: 'stopped', sample: 'START', to: 'active.awakeIdle' },
  { from: 'stopped', sample: 'TERMINATE', to: 'terminating' },
  { from: 'stopped', sample: 'RECOVER', to: 'recovering' },

  { from: 'terminating', sample: 'TERMINATE.DONE', to: 'terminated' },
  { from: 'terminating', sample: 'RECOVER', to: 'recovering' },
  { from: 'terminating', sample: 'TERMINATE.FAILED', to: 'recovering' },
];

export function legalTarget(from: AgentStateName, sample: SampleName): AgentStateName | undefined {
  return LEGAL.find((row) => row.from === from && row.sample === sample)?.to;
}
