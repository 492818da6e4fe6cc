import { describe, expect, it } from 'vitest';
import { addTransition, appendRecord, copyDoc, prune, reshare, type AgentDoc } from '../../src/runtime/agent/agent-doc.js';
import { updateMessages } from '../../src/runtime/agent/messages.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

/** A real agent document, with at least one message to shape test messages after. */
async function docWithOpenMessages() {
  const store = new MemoryStore();
  const runtime = await Runtime.open({ store, nodeId: 'copy-doc' });
  await runtime.createAgent({ agent_id: 'c', config: { turn_runner: 'http_worker', model: 'external' } });
  await untilAsleep(runtime, 'c');
  await runtime.prompt('c', { text: 'a message to copy the shape of' });
  const doc = (await store.loadAgent('c'))?.doc;
  await runtime.close();
  return structuredClone(doc) as Parameters<typeof copyDoc>[0];
}

/** A task record that is still running (an open record: copied by copyDoc); only its id and status matter here. */
function openTask(id: string): AgentDoc['tasks'][number] {
  return { id, status: 'running' } as AgentDoc['tasks'][number];
}

describe('copyDoc and reshare', () => {
  it('an operation that changes nothing commits the very lists and records it started from', async () => {
    const base = await docWithOpenMessages();
    base.queue = [
      { ...(base.queue[0] ?? ({} as never)), id: 'open-1', status: 'queued' },
      { ...(base.queue[0] ?? ({} as never)), id: 'open-2', status: 'queued' },
    ];
    base.tasks = [openTask('t1'), openTask('t2')];
    const draft = copyDoc(base);
    // Messages are never edited in place (updateMessages replaces them): the queue is shared.
    expect(draft.queue).toBe(base.queue);
    // Open tasks are copied one level deep, for an operation that assigns their fields.
    expect(draft.tasks).not.toBe(base.tasks);
    expect(draft.tasks[0]).not.toBe(base.tasks[0]);
    expect(draft.tasks[0]).toEqual(base.tasks[0]);
    expect(draft.transitions).toBe(base.transitions);
    reshare(draft, base);
    expect(draft.tasks).toBe(base.tasks);
    expect(draft.queue).toBe(base.queue);
  });

  it('keeps the copy of an edited record, and puts back the others', async () => {
    const base = await docWithOpenMessages();
    base.tasks = ['a', 'b', 'c'].map(openTask);
    const draft = copyDoc(base);
    const edited = draft.tasks[1];
    if (edited) edited.status = 'cancelled';
    reshare(draft, base);
    expect(draft.tasks).not.toBe(base.tasks);
    expect(draft.tasks[0]).toBe(base.tasks[0]);
    expect(draft.tasks[1]).toBe(edited);
    expect(draft.tasks[2]).toBe(base.tasks[2]);
    expect(base.tasks[1]?.status).toBe('running');
  });

  it('a message changes by replacement: a new list and record in the draft, the others and the base untouched', async () => {
    const base = await docWithOpenMessages();
    base.queue = ['a', 'b', 'c'].map((id) => ({ ...(base.queue[0] ?? ({} as never)), id, status: 'queued' as const, run_id: null }));
    const draft = copyDoc(base);
    const replaced = updateMessages(draft, (m) => m.id === 'b', { status: 'dequeued', run_id: 'run-1' });
    expect(replaced.map((m) => [m.id, m.status, m.run_id])).toEqual([['b', 'dequeued', 'run-1']]);
    expect(draft.queue).not.toBe(base.queue);
    expect(draft.queue[0]).toBe(base.queue[0]);
    expect(draft.queue[1]).toBe(replaced[0]);
    expect(draft.queue[2]).toBe(base.queue[2]);
    expect(base.queue[1]).toMatchObject({ status: 'queued', run_id: null });
    // Nothing picked: the list keeps its identity (the store logs no change).
    const list = draft.queue;
    expect(updateMessages(draft, () => false, { status: 'processed' })).toEqual([]);
    expect(draft.queue).toBe(list);
    reshare(draft, base);
    expect(draft.queue[1]).toBe(replaced[0]);
    expect(draft.queue[0]).toBe(base.queue[0]);
  });

  it('a list appended to stays new while its old records go back to the originals', async () => {
    const base = await docWithOpenMessages();
    base.queue = [{ ...(base.queue[0] ?? ({} as never)), id: 'a', status: 'queued' as const }];
    const draft = copyDoc(base);
    appendRecord(draft, 'queue', { ...(base.queue[0] ?? ({} as never)), id: 'b' });
    reshare(draft, base);
    expect(draft.queue).toHaveLength(2);
    expect(draft.queue[0]).toBe(base.queue[0]);
    expect(base.queue).toHaveLength(1);
  });

  it('a list with no open record is shared by the copy until something is appended', async () => {
    const base = await docWithOpenMessages();
    base.queue = base.queue.map((m) => ({ ...m, status: 'processed' as const }));
    const draft = copyDoc(base);
    expect(draft.queue).toBe(base.queue);
    appendRecord(draft, 'queue', { ...(base.queue[0] ?? ({} as never)), id: 'new', status: 'queued' });
    expect(base.queue.some((m) => m.id === 'new')).toBe(false);
  });
});

describe('prune', () => {
  it('keeps the newest 64 processed messages of a changed queue, and every open one', async () => {
    const base = await docWithOpenMessages();
    const shape = base.queue[0] as AgentDoc['queue'][number];
    base.queue = Array.from({ length: 64 }, (_, i) => ({ ...shape, id: `old-${i}`, seq: i + 1, status: 'processed' as const }));
    const draft = copyDoc(base);
    appendRecord(draft, 'queue', { ...shape, id: 'open', seq: 65, status: 'queued' });
    appendRecord(draft, 'queue', { ...shape, id: 'done', seq: 66, status: 'processed' });
    prune(draft, base);
    expect(draft.queue).toHaveLength(65);
    expect(draft.queue[0]?.id).toBe('old-1');
    expect(draft.queue.map((m) => m.id).slice(-2)).toEqual(['open', 'done']);
  });

  it('leaves a list that is still the version before’s alone: it was pruned when that version was committed', async () => {
    const base = await docWithOpenMessages();
    const shape = base.queue[0] as AgentDoc['queue'][number];
    // Over the bound, so a walk would drop one: only a list the draft changed is walked.
    base.queue = Array.from({ length: 65 }, (_, i) => ({ ...shape, id: `old-${i}`, seq: i + 1, status: 'processed' as const }));
    const draft = copyDoc(base);
    expect(draft.queue).toBe(base.queue);
    prune(draft, base);
    expect(draft.queue).toBe(base.queue);
    expect(draft.queue).toHaveLength(65);
  });

  it('keeps the newest 64 transition records, the newest 512 client-named ones and the records closing those, oldest first', async () => {
    const base = await docWithOpenMessages();
    const shape = base.transitions[0] as AgentDoc['transitions'][number];
    const runtimeId = (n: number) => `tr_${n.toString(16).padStart(20, '0')}`;
    const records: AgentDoc['transitions'] = [];
    // 600 client-named transitions, each closed by a runtime record naming it, then 100 plain ones.
    for (let i = 0; i < 600; i++) {
      records.push({ ...shape, transition_id: `client-${i}`, seq: records.length + 1, evidence_refs: [] });
      records.push({ ...shape, transition_id: runtimeId(records.length + 1), seq: records.length + 1, evidence_refs: [`transition:client-${i}`] });
    }
    for (let i = 0; i < 100; i++) records.push({ ...shape, transition_id: runtimeId(records.length + 1), seq: records.length + 1, evidence_refs: [] });
    base.transitions = records.slice(0, -1);
    const draft = copyDoc(base);
    addTransition(draft, records.at(-1) as AgentDoc['transitions'][number]);
    prune(draft, base);
    const ids = draft.transitions.map((t) => t.transition_id);
    expect(ids.filter((id) => id.startsWith('client-'))).toEqual(Array.from({ length: 512 }, (_, i) => `client-${i + 88}`));
    expect(draft.transitions.filter((t) => t.evidence_refs.length > 0)).toHaveLength(512);
    expect(ids.slice(-64)).toEqual(records.slice(-64).map((t) => t.transition_id));
    expect(draft.transitions).toHaveLength(512 * 2 + 64);
    expect(draft.transitions.map((t) => t.seq)).toEqual([...draft.transitions.map((t) => t.seq)].sort((a, b) => a - b));
    // Within the bound, the list is the draft's own: nothing to drop.
    const within = copyDoc(base);
    within.transitions = records.slice(-64);
    prune(within, base);
    expect(within.transitions).toHaveLength(64);
  });
});
