import { describe, expect, it } from 'vitest';
import { appendRecord, copyDoc, prune, type AgentDoc } from '../../src/runtime/agent-doc.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

async function agentDoc(): Promise<AgentDoc> {
  const store = new MemoryStore();
  const runtime = await Runtime.open({ store, nodeId: 'prune' });
  await runtime.createAgent({ agent_id: 'p', config: { turn_runner: 'http_worker', model: 'external' } });
  await untilAsleep(runtime, 'p');
  await runtime.prompt('p', { text: 'shape' });
  const doc = (await store.loadAgent('p'))?.doc;
  await runtime.close();
  return structuredClone(doc) as AgentDoc;
}

describe('prune', () => {
  it('keeps the newest 64 processed messages of a changed queue, and every open one', async () => {
    const base = await agentDoc();
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
    const base = await agentDoc();
    const shape = base.queue[0] as AgentDoc['queue'][number];
    // Over the bound, so a walk would drop one: only a list the draft changed is walked.
    base.queue = Array.from({ length: 65 }, (_, i) => ({ ...shape, id: `old-${i}`, seq: i + 1, status: 'processed' as const }));
    const draft = copyDoc(base);
    expect(draft.queue).toBe(base.queue);
    prune(draft, base);
    expect(draft.queue).toBe(base.queue);
    expect(draft.queue).toHaveLength(65);
  });
});
