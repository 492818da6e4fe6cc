import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { agentMachine, taskMachine, continuationMachine } from '../../machines/index.js';
import { persistOnce } from '../../src/runtime/persist-once.js';

const logic = agentMachine.provide({ actors: { task: persistOnce(taskMachine), continuation: persistOnce(continuationMachine) } });

function activeAgentWithTasks(count: number) {
  const actor = createActor(logic, { input: { agentId: 'a' } }).start();
  actor.send({ type: 'INITIALIZE' });
  actor.send({ type: 'INITIALIZE.DONE' });
  for (let i = 0; i < count; i++) actor.send({ type: 'TASK.SPAWN', taskId: `t${i}`, kind: 'command_task', acceptsInput: false });
  return actor;
}

type Persisted = { children: Record<string, { snapshot: unknown }> };

describe('persistOnce', () => {
  it('persists an unchanged child to the same object, and a changed one anew', () => {
    const actor = activeAgentWithTasks(3);
    const first = actor.getPersistedSnapshot() as unknown as Persisted;
    actor.getSnapshot().children['t1']?.send({ type: 'START' });
    const second = actor.getPersistedSnapshot() as unknown as Persisted;
    expect(second.children['t0']?.snapshot).toBe(first.children['t0']?.snapshot);
    expect(second.children['t2']?.snapshot).toBe(first.children['t2']?.snapshot);
    expect(second.children['t1']?.snapshot).not.toBe(first.children['t1']?.snapshot);
    expect((second.children['t1']?.snapshot as { value: unknown }).value).not.toEqual((first.children['t1']?.snapshot as { value: unknown }).value);
    actor.stop();
  });

  it('persists exactly what the plain machine persists, and restores from it', () => {
    const actor = activeAgentWithTasks(2);
    actor.getSnapshot().children['t0']?.send({ type: 'START' });
    const persisted = actor.getPersistedSnapshot();
    const plain = createActor(agentMachine, { input: { agentId: 'a' }, snapshot: persisted as never }).start();
    expect(JSON.parse(JSON.stringify(plain.getPersistedSnapshot()))).toEqual(JSON.parse(JSON.stringify(persisted)));
    const restored = createActor(logic, { input: { agentId: 'a' }, snapshot: persisted as never }).start();
    expect(restored.getSnapshot().children['t0']?.getSnapshot().value).toEqual(actor.getSnapshot().children['t0']?.getSnapshot().value);
    restored.getSnapshot().children['t0']?.send({ type: 'EXITED', exitCode: 0 });
    expect(restored.getSnapshot().children['t0']).toBeUndefined();
    expect(Object.keys(restored.getSnapshot().children).sort()).toEqual(['continuation', 't1']);
    plain.stop();
    restored.stop();
    actor.stop();
  });
});
