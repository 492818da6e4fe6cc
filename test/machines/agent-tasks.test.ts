import { describe, expect, it } from 'vitest';
import { createActor, type AnyActorRef, type InspectionEvent } from 'xstate';
import { agentMachine } from '../../machines/agent.machine.js';
import type { AgentEvent } from '../../machines/agent.machine.js';
import { taskMachine } from '../../machines/task.machine.js';
import type { TaskEmitted, TaskEvent, TaskFinishedNotice } from '../../machines/task.machine.js';
import type { TaskStatus } from '../../src/domain/index.js';
import { AGENT_ID, ROUTE_TO, statePath } from './fixtures.js';
import type { AgentStateName } from './fixtures.js';

/** An agent in `state` that records every `task.finished` notice it receives from its children. */
function agentWithTasks(state: AgentStateName) {
  const notices: TaskFinishedNotice[] = [];
  let root: AnyActorRef | undefined;
  const inspect = (inspection: InspectionEvent) => {
    if (inspection.type !== '@xstate.event' || inspection.actorRef !== root) return;
    const event = inspection.event as AgentEvent;
    if (event.type === 'task.finished') notices.push(event);
  };
  const actor = createActor(agentMachine, { input: { agentId: AGENT_ID }, inspect });
  root = actor;
  actor.start();
  for (const event of ROUTE_TO[state]) actor.send(event);
  const spawn = (taskId: string, acceptsInput = false) =>
    actor.send({ type: 'TASK.SPAWN', taskId, kind: 'command_task', acceptsInput });
  const task = (taskId: string) => actor.getSnapshot().children[taskId];
  const sendTask = (taskId: string, ...events: TaskEvent[]) => {
    const ref = task(taskId);
    if (!ref) throw new Error(`no task ${taskId}`);
    for (const event of events) ref.send(event);
  };
  return { actor, notices, spawn, task, sendTask };
}

describe('agent machine: task children', () => {
  it.each(['active.awakeIdle', 'active.awakeRunning', 'active.awaitingTask'] as const)(
    'TASK.SPAWN in %s spawns a queued task child bound to the agent',
    (state) => {
      const { actor, spawn, task } = agentWithTasks(state);
      spawn('t1', true);
      const child = task('t1');
      expect(child).toBeDefined();
      expect(child?.getSnapshot().value).toBe('queued');
      expect(child?.getSnapshot().context).toEqual({
        taskId: 't1',
        agentId: AGENT_ID,
        kind: 'command_task',
        acceptsInput: true,
        exitCode: null,
        reason: null,
        inputCount: 0,
      });
      expect(statePath(actor.getSnapshot().value)).toBe(state);
    },
  );

  it.each(['created', 'initializing', 'sleeping', 'waking', 'recovering', 'evolving', 'stopped', 'terminating'] as const)(
    'TASK.SPAWN outside Active (%s) spawns nothing',
    (state) => {
      const { spawn, task, actor } = agentWithTasks(state);
      spawn('t1');
      expect(task('t1')).toBeUndefined();
      expect(Object.keys(actor.getSnapshot().children)).toEqual(['continuation']);
    },
  );

  const endings: { name: string; events: TaskEvent[]; status: TaskStatus; exitCode: number | null; reason: string | null }[] = [
    { name: 'clean exit', events: [{ type: 'START' }, { type: 'EXITED', exitCode: 0 }], status: 'completed', exitCode: 0, reason: null },
    { name: 'failed exit', events: [{ type: 'START' }, { type: 'EXITED', exitCode: 2 }], status: 'failed', exitCode: 2, reason: null },
    { name: 'timeout', events: [{ type: 'START' }, { type: 'TIMED_OUT' }], status: 'failed', exitCode: null, reason: 'timeout' },
    {
      name: 'stop while running',
      events: [{ type: 'START' }, { type: 'STOP' }, { type: 'EXITED', exitCode: 143 }],
      status: 'cancelled',
      exitCode: 143,
      reason: 'stopped',
    },
    { name: 'stop before start', events: [{ type: 'STOP' }], status: 'cancelled', exitCode: null, reason: 'stopped' },
    {
      name: 'spawn failure',
      events: [{ type: 'SPAWN_FAILED', reason: 'ENOENT' }],
      status: 'failed',
      exitCode: null,
      reason: 'ENOENT',
    },
    {
      name: 'restart while running',
      events: [{ type: 'START' }, { type: 'INTERRUPT', reason: 'runtime restarted' }],
      status: 'interrupted',
      exitCode: null,
      reason: 'runtime restarted',
    },
  ];

  it.each(endings)('a task ending by $name tells its agent ($status) and the agent stops it', (ending) => {
    const { notices, spawn, task, sendTask } = agentWithTasks('active.awakeRunning');
    spawn('t1');
    sendTask('t1', ...ending.events);
    expect(notices).toEqual([
      { type: 'task.finished', taskId: 't1', status: ending.status, exitCode: ending.exitCode, reason: ending.reason },
    ]);
    expect(task('t1')).toBeUndefined();
  });

  it('a live task is not stopped; only the finished one of two is', () => {
    const { notices, spawn, task, sendTask } = agentWithTasks('active.awakeIdle');
    spawn('t1');
    spawn('t2');
    sendTask('t1', { type: 'START' });
    sendTask('t2', { type: 'START' });
    expect(notices).toEqual([]);
    sendTask('t2', { type: 'EXITED', exitCode: 0 });
    expect(task('t1')?.getSnapshot().value).toBe('running');
    expect(task('t2')).toBeUndefined();
    expect(notices.map((notice) => notice.taskId)).toEqual(['t2']);
  });

  it('a task that finishes after its agent left Active is still stopped (the notice is handled in every state)', () => {
    const { actor, spawn, task, sendTask } = agentWithTasks('active.awakeRunning');
    spawn('t1');
    sendTask('t1', { type: 'START' });
    actor.send({ type: 'STOP', reason: 'operator' });
    expect(actor.getSnapshot().value).toBe('stopped');
    expect(task('t1')?.getSnapshot().value).toBe('running');
    sendTask('t1', { type: 'EXITED', exitCode: 1 });
    expect(task('t1')).toBeUndefined();
    expect(actor.getSnapshot().value).toBe('stopped');
  });

  it('a notice does not move the agent: settling is the runtime\'s TASK.SETTLED with fresh facts', () => {
    const { actor, spawn, sendTask } = agentWithTasks('active.awaitingTask');
    spawn('t1');
    sendTask('t1', { type: 'START' }, { type: 'EXITED', exitCode: 0 });
    expect(actor.getSnapshot().value).toEqual({ active: 'awaitingTask' });
    expect(actor.getSnapshot().context.epoch).toBe(1);
  });

  it('input to a child task created with accepts_input is accepted and announced on the task', () => {
    const { spawn, task, sendTask } = agentWithTasks('active.awakeRunning');
    spawn('t1', true);
    const accepted: TaskEmitted[] = [];
    task('t1')?.on('task.input_accepted', (event: TaskEmitted) => accepted.push(event));
    sendTask('t1', { type: 'START' }, { type: 'INPUT' });
    expect(accepted).toEqual([{ type: 'task.input_accepted', taskId: 't1' }]);
    expect(task('t1')?.getSnapshot().context).toMatchObject({ inputCount: 1 });
  });

  it('a standalone task (no parent) finishes without sending anything', () => {
    const events: string[] = [];
    const task = createActor(taskMachine, {
      input: { taskId: 't1', agentId: AGENT_ID, kind: 'command_task', acceptsInput: false },
      inspect: (inspection) => {
        if (inspection.type === '@xstate.event') events.push(inspection.event.type);
      },
    }).start();
    task.send({ type: 'START' });
    task.send({ type: 'EXITED', exitCode: 0 });
    expect(task.getSnapshot().status).toBe('done');
    expect(events).toEqual(['xstate.init', 'START', 'EXITED']);
  });
});
