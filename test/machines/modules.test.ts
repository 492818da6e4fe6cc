import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';

/**
 * Each machine module loads, and its machine builds and starts in its initial state. The imports are dynamic on
 * purpose: a definition XState rejects at build time (a dangling target, a compound state without `initial`)
 * throws while the module loads, and a static import would turn that into a file that collects no tests,
 * which Stryker's vitest runner does not count as a failure.
 */
describe('machine modules load and start', () => {
  it('agent.machine: an agent starts Created, with its continuation child', async () => {
    const { agentMachine } = await import('../../machines/agent.machine.js');
    const actor = createActor(agentMachine, { input: { agentId: 'a1' } }).start();
    expect(agentMachine.id).toBe('agent');
    expect(actor.getSnapshot().value).toBe('created');
    expect(Object.keys(actor.getSnapshot().children)).toEqual(['continuation']);
    actor.send({ type: 'INITIALIZE' });
    actor.send({ type: 'INITIALIZE.DONE' });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
  });

  it('task.machine: a task starts queued', async () => {
    const { taskMachine } = await import('../../machines/task.machine.js');
    const actor = createActor(taskMachine, {
      input: { taskId: 't1', agentId: 'a1', kind: 'command_task', acceptsInput: false },
    }).start();
    expect(taskMachine.id).toBe('task');
    expect(actor.getSnapshot().value).toBe('queued');
  });

  it('continuation.machine: two parallel regions start idle and clear', async () => {
    const { continuationMachine } = await import('../../machines/continuation.machine.js');
    const actor = createActor(continuationMachine, { input: { agentId: 'a1' } }).start();
    expect(continuationMachine.id).toBe('continuation');
    expect(actor.getSnapshot().value).toEqual({ wait: 'idle', wakeHint: 'clear' });
  });

  it('supervisor.machine: a supervisor starts running', async () => {
    const { supervisorMachine } = await import('../../machines/supervisor.machine.js');
    const actor = createActor(supervisorMachine, { input: { shardId: 0, capacity: 1 } }).start();
    expect(supervisorMachine.id).toBe('supervisor');
    expect(actor.getSnapshot().value).toBe('running');
  });

  it('index: the registry holds the four machines', async () => {
    const { machines } = await import('../../machines/index.js');
    expect(Object.keys(machines).sort()).toEqual(['agent', 'continuation', 'supervisor', 'task']);
  });
});
