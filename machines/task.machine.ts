import { assign, enqueueActions, setup } from 'xstate';
import type { TaskKind, TaskStatus } from '../src/domain/index.js';

/** Seed 004 task lifecycle: Queued → Running → Completed | Failed | Interrupted; Running → Cancelling → Cancelled. */
export interface TaskInput {
  taskId: string;
  agentId: string;
  kind: TaskKind;
  acceptsInput: boolean;
}

export interface TaskContext extends TaskInput {
  exitCode: number | null;
  reason: string | null;
  inputCount: number;
}

export type TaskEvent =
  | { type: 'START' }
  | { type: 'EXITED'; exitCode: number }
  | { type: 'TIMED_OUT' }
  | { type: 'SPAWN_FAILED'; reason: string }
  | { type: 'STOP' }
  | { type: 'INTERRUPT'; reason: string }
  | { type: 'INPUT' };

/** The typed notice a task sends its parent agent when it reaches a terminal state. */
export interface TaskFinishedNotice {
  type: 'task.finished';
  taskId: string;
  status: TaskStatus;
  exitCode: number | null;
  reason: string | null;
}

export type TaskEmitted =
  | { type: 'task.stop_requested'; taskId: string; force: boolean }
  | { type: 'task.input_accepted'; taskId: string };

function finished(status: TaskStatus) {
  return { type: 'notifyParent' as const, params: { status } };
}

export const taskMachine = setup({
  types: {
    context: {} as TaskContext,
    input: {} as TaskInput,
    events: {} as TaskEvent,
    emitted: {} as TaskEmitted,
  },
  guards: {
    exitedCleanly: ({ event }) => event.type === 'EXITED' && event.exitCode === 0,
    acceptsInput: ({ context }) => context.acceptsInput,
  },
  actions: {
    recordExit: assign({
      exitCode: ({ event }) => (event.type === 'EXITED' ? event.exitCode : null),
    }),
    recordReason: assign({
      reason: ({ event }) => {
        switch (event.type) {
          case 'TIMED_OUT':
            return 'timeout';
          case 'SPAWN_FAILED':
          case 'INTERRUPT':
            return event.reason;
          case 'STOP':
            return 'stopped';
          default:
            return null;
        }
      },
    }),
    countInput: assign({ inputCount: ({ context }) => context.inputCount + 1 }),
    emitInputAccepted: enqueueActions(({ context, enqueue }) => {
      enqueue.emit({ type: 'task.input_accepted', taskId: context.taskId });
    }),
    requestStop: enqueueActions(({ context, enqueue }, params: { force: boolean }) => {
      enqueue.emit({ type: 'task.stop_requested', taskId: context.taskId, force: params.force });
    }),
    // A task run on its own (tests, graph traversal) has no parent to tell.
    notifyParent: enqueueActions(({ context, self, enqueue }, params: { status: TaskStatus }) => {
      if (!self._parent) return;
      const notice: TaskFinishedNotice = {
        type: 'task.finished',
        taskId: context.taskId,
        status: params.status,
        exitCode: context.exitCode,
        reason: context.reason,
      };
      enqueue.sendParent(notice);
    }),
  },
}).createMachine({
  id: 'task',
  context: ({ input }) => ({ ...input, exitCode: null, reason: null, inputCount: 0 }),
  initial: 'queued',
  states: {
    queued: {
      meta: { status: 'queued' },
      on: {
        START: 'running',
        STOP: { target: 'cancelled', actions: 'recordReason' },
        SPAWN_FAILED: { target: 'failed', actions: 'recordReason' },
        INTERRUPT: { target: 'interrupted', actions: 'recordReason' },
      },
    },
    running: {
      meta: { status: 'running' },
      on: {
        EXITED: [
          { guard: 'exitedCleanly', target: 'completed', actions: 'recordExit' },
          { target: 'failed', actions: 'recordExit' },
        ],
        TIMED_OUT: { target: 'failed', actions: 'recordReason' },
        STOP: { target: 'cancelling', actions: ['recordReason', { type: 'requestStop', params: { force: false } }] },
        INTERRUPT: { target: 'interrupted', actions: 'recordReason' },
        INPUT: { guard: 'acceptsInput', actions: ['countInput', 'emitInputAccepted'] },
      },
    },
    cancelling: {
      meta: { status: 'cancelling' },
      on: {
        // Whatever way the process ends once a stop was requested, the stop wins: a stopped
        // command reports `stopped`, never `timeout` (a stop also clears its timeout), so it EXITED.
        EXITED: { target: 'cancelled', actions: 'recordExit' },
        STOP: { actions: { type: 'requestStop', params: { force: true } } },
        INTERRUPT: { target: 'interrupted', actions: 'recordReason' },
      },
    },
    completed: { type: 'final', meta: { status: 'completed' }, entry: finished('completed') },
    failed: { type: 'final', meta: { status: 'failed' }, entry: finished('failed') },
    cancelled: { type: 'final', meta: { status: 'cancelled' }, entry: finished('cancelled') },
    interrupted: { type: 'final', meta: { status: 'interrupted' }, entry: finished('interrupted') },
  },
});
