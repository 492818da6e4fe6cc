import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { createActor } from 'xstate';
import { legalTaskTransition } from '../../machines/contracts/task-phase.js';
import { taskMachine } from '../../machines/task.machine.js';
import type { TaskEmitted, TaskEvent } from '../../machines/task.machine.js';
import type { TaskStatus } from '../../src/domain/index.js';

const TERMINAL = ['completed', 'failed', 'cancelled', 'interrupted'] as const;
type Reachable = 'queued' | 'running' | 'cancelling' | (typeof TERMINAL)[number];

const ROUTE: Readonly<Record<Reachable, readonly TaskEvent[]>> = {
  queued: [],
  running: [{ type: 'START' }],
  cancelling: [{ type: 'START' }, { type: 'STOP' }],
  completed: [{ type: 'START' }, { type: 'EXITED', exitCode: 0 }],
  failed: [{ type: 'START' }, { type: 'EXITED', exitCode: 1 }],
  cancelled: [{ type: 'STOP' }],
  interrupted: [{ type: 'INTERRUPT', reason: 'runtime restarted' }],
};

const ALL_EVENTS: readonly TaskEvent[] = [
  { type: 'START' },
  { type: 'EXITED', exitCode: 0 },
  { type: 'EXITED', exitCode: 1 },
  { type: 'TIMED_OUT' },
  { type: 'SPAWN_FAILED', reason: 'ENOENT' },
  { type: 'STOP' },
  { type: 'INTERRUPT', reason: 'runtime restarted' },
  { type: 'INPUT' },
];

function taskIn(state: Reachable, acceptsInput = false) {
  const emitted: TaskEmitted[] = [];
  const actor = createActor(taskMachine, { input: { taskId: 't1', agentId: 'a1', kind: 'command_task', acceptsInput } });
  actor.on('*', (event) => emitted.push(event));
  actor.start();
  for (const event of ROUTE[state]) actor.send(event);
  expect(actor.getSnapshot().value).toBe(state);
  return { actor, emitted };
}

interface TaskTransition {
  from: Reachable;
  event: TaskEvent;
  to: Reachable;
  exitCode: number | null;
  reason: string | null;
  emitted: TaskEmitted[];
}

/** Seed 004's diagram as the machine implements it. */
const LEGAL: readonly TaskTransition[] = [
  { from: 'queued', event: { type: 'START' }, to: 'running', exitCode: null, reason: null, emitted: [] },
  { from: 'queued', event: { type: 'STOP' }, to: 'cancelled', exitCode: null, reason: 'stopped', emitted: [] },
  { from: 'queued', event: { type: 'SPAWN_FAILED', reason: 'ENOENT' }, to: 'failed', exitCode: null, reason: 'ENOENT', emitted: [] },
  { from: 'queued', event: { type: 'INTERRUPT', reason: 'restart' }, to: 'interrupted', exitCode: null, reason: 'restart', emitted: [] },
  { from: 'running', event: { type: 'EXITED', exitCode: 0 }, to: 'completed', exitCode: 0, reason: null, emitted: [] },
  { from: 'running', event: { type: 'EXITED', exitCode: 1 }, to: 'failed', exitCode: 1, reason: null, emitted: [] },
  { from: 'running', event: { type: 'EXITED', exitCode: -1 }, to: 'failed', exitCode: -1, reason: null, emitted: [] },
  { from: 'running', event: { type: 'TIMED_OUT' }, to: 'failed', exitCode: null, reason: 'timeout', emitted: [] },
  {
    from: 'running',
    event: { type: 'STOP' },
    to: 'cancelling',
    exitCode: null,
    reason: 'stopped',
    emitted: [{ type: 'task.stop_requested', taskId: 't1', force: false }],
  },
  { from: 'running', event: { type: 'INTERRUPT', reason: 'restart' }, to: 'interrupted', exitCode: null, reason: 'restart', emitted: [] },
  // Whatever way the process ends once a stop was requested, the stop wins.
  { from: 'cancelling', event: { type: 'EXITED', exitCode: 0 }, to: 'cancelled', exitCode: 0, reason: 'stopped', emitted: [] },
  { from: 'cancelling', event: { type: 'EXITED', exitCode: 137 }, to: 'cancelled', exitCode: 137, reason: 'stopped', emitted: [] },
  {
    from: 'cancelling',
    event: { type: 'STOP' },
    to: 'cancelling',
    exitCode: null,
    reason: 'stopped',
    emitted: [{ type: 'task.stop_requested', taskId: 't1', force: true }],
  },
  { from: 'cancelling', event: { type: 'INTERRUPT', reason: 'restart' }, to: 'interrupted', exitCode: null, reason: 'restart', emitted: [] },
];

let warn: MockInstance<typeof console.warn>;
beforeEach(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  warn.mockRestore();
});

describe('task machine (seed 004): legal transitions', () => {
  it('starts queued with no exit code, no reason and no input', () => {
    const { actor } = taskIn('queued', true);
    expect(actor.getSnapshot().context).toEqual({
      taskId: 't1',
      agentId: 'a1',
      kind: 'command_task',
      acceptsInput: true,
      exitCode: null,
      reason: null,
      inputCount: 0,
    });
  });

  it.each(LEGAL)('$from --[$event.type $event]--> $to', ({ from, event, to, exitCode, reason, emitted }) => {
    const { actor, emitted: seen } = taskIn(from);
    const before = seen.length;
    actor.send(event);
    const snapshot = actor.getSnapshot();
    expect(snapshot.value).toBe(to);
    expect(snapshot.status).toBe((TERMINAL as readonly string[]).includes(to) ? 'done' : 'active');
    expect(snapshot.context.exitCode).toBe(exitCode);
    expect(snapshot.context.reason).toBe(reason);
    expect(seen.slice(before)).toEqual(emitted);
  });

  it.each(LEGAL.filter((row) => row.from !== row.to))(
    'agrees with the legalTaskTransition contract: $from → $to',
    ({ from, to }) => {
      expect(legalTaskTransition(from as TaskStatus, to as TaskStatus)).toBe(true);
    },
  );

  it.each(Object.keys(ROUTE) as Reachable[])('state %s carries its TaskStatus as meta', (state) => {
    const { actor } = taskIn(state);
    expect(Object.values(actor.getSnapshot().getMeta())).toEqual([{ status: state }]);
  });

  it('a repeated stop while cancelling escalates every time (SIGTERM then SIGKILL)', () => {
    const { actor, emitted } = taskIn('cancelling');
    actor.send({ type: 'STOP' });
    actor.send({ type: 'STOP' });
    expect(emitted).toEqual([
      { type: 'task.stop_requested', taskId: 't1', force: false },
      { type: 'task.stop_requested', taskId: 't1', force: true },
      { type: 'task.stop_requested', taskId: 't1', force: true },
    ]);
  });
});

describe('task machine: refusals', () => {
  const illegal = (Object.keys(ROUTE) as Reachable[]).flatMap((from) =>
    ALL_EVENTS.filter(
      (event) =>
        !LEGAL.some((row) => row.from === from && row.event.type === event.type) &&
        !(from === 'running' && event.type === 'INPUT'),
    ).map((event) => ({ from, event })),
  );

  it.each(illegal)('$from refuses $event.type', ({ from, event }) => {
    const { actor, emitted } = taskIn(from, true);
    const before = actor.getSnapshot();
    const seen = emitted.length;
    actor.send(event);
    expect(actor.getSnapshot().value).toBe(from);
    expect(actor.getSnapshot().context).toEqual(before.context);
    expect(emitted).toHaveLength(seen);
  });

  it.each(TERMINAL)('terminal %s accepts no event at all', (state) => {
    const { actor } = taskIn(state, true);
    const before = actor.getSnapshot();
    expect(before.status).toBe('done');
    for (const event of ALL_EVENTS) {
      expect(before.can(event), event.type).toBe(false);
      actor.send(event);
      expect(actor.getSnapshot().value).toBe(state);
      expect(actor.getSnapshot().context).toEqual(before.context);
    }
  });

  it('a queued task cannot complete without running', () => {
    const { actor } = taskIn('queued');
    actor.send({ type: 'EXITED', exitCode: 0 });
    expect(actor.getSnapshot().value).toBe('queued');
  });
});

describe('task machine: interactive input (accepts_input)', () => {
  it('INPUT to a task created without accepts_input is refused: state unchanged, nothing emitted', () => {
    const { actor, emitted } = taskIn('running', false);
    expect(actor.getSnapshot().can({ type: 'INPUT' })).toBe(false);
    actor.send({ type: 'INPUT' });
    expect(actor.getSnapshot().value).toBe('running');
    expect(actor.getSnapshot().context.inputCount).toBe(0);
    expect(emitted).toEqual([]);
  });

  it('INPUT to a task created with accepts_input is accepted, counted and announced each time', () => {
    const { actor, emitted } = taskIn('running', true);
    expect(actor.getSnapshot().can({ type: 'INPUT' })).toBe(true);
    actor.send({ type: 'INPUT' });
    actor.send({ type: 'INPUT' });
    expect(actor.getSnapshot().value).toBe('running');
    expect(actor.getSnapshot().context.inputCount).toBe(2);
    expect(emitted).toEqual([
      { type: 'task.input_accepted', taskId: 't1' },
      { type: 'task.input_accepted', taskId: 't1' },
    ]);
  });

  it.each(['queued', 'cancelling'] as const)('INPUT while %s is refused even with accepts_input', (state) => {
    const { actor, emitted } = taskIn(state, true);
    const seen = emitted.length;
    actor.send({ type: 'INPUT' });
    expect(actor.getSnapshot().context.inputCount).toBe(0);
    expect(emitted).toHaveLength(seen);
  });
});
