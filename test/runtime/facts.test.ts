import { describe, expect, it } from 'vitest';
import { hasActiveTasks, idleBoundaryDecision } from '../../machines/contracts/index.js';
import type { SchedulerFacts, TaskRecord } from '../../src/domain/index.js';
import type { AgentDoc } from '../../src/runtime/agent/agent-doc.js';
import { factsOf } from '../../src/runtime/agent/facts.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

/** A real document holding one queued prompt (an `http_worker` agent: nobody claims its turn). */
async function docWithPrompt(): Promise<AgentDoc> {
  const store = new MemoryStore();
  const runtime = await Runtime.open({ store, nodeId: 'facts' });
  await runtime.createAgent({ agent_id: 'f', config: { turn_runner: 'http_worker', model: 'external' } });
  await untilAsleep(runtime, 'f');
  await runtime.prompt('f', { text: 'a message to copy the shape of' });
  const doc = structuredClone((await store.loadAgent('f'))?.doc) as AgentDoc;
  await runtime.close();
  return doc;
}

function task(id: string, status: TaskRecord['status']): TaskRecord {
  const at = '2026-11-30T00:00:00.000Z';
  return { id, agent_id: 'f', kind: 'command_task', status, summary: id, created_at: at, updated_at: at, work_item_id: null, parent_run_id: null, accepts_input: false, cmd: 'true', workdir: null, timeout_ms: null, exit_code: null, reason: null, child_agent_id: null, output_bytes: 0, result_text: null };
}

describe('factsOf', () => {
  it('projects the live tasks only: finished ones change no rule, and an agent keeps up to 256 of them', async () => {
    const doc = await docWithPrompt();
    doc.tasks = [
      ...Array.from({ length: 300 }, (_, i) => task(`done-${i}`, i % 3 === 0 ? 'failed' : 'completed')),
      task('live', 'running'),
      task('waiting', 'queued'),
    ];
    // Awake, with its prompt handled: what the idle boundary decides rests on the tasks alone.
    const idle = (facts: SchedulerFacts): SchedulerFacts => ({ ...facts, status: 'awake_idle', queue: { queued: 0, interrupted: 0 } });
    const facts = factsOf(doc);
    expect(facts.tasks.map((t) => t.id)).toEqual(['live', 'waiting']);
    expect(hasActiveTasks(facts)).toBe(true);
    expect(idleBoundaryDecision(idle(facts))).toMatchObject({ kind: 'wait_for_task', task_id: 'live' });
    doc.tasks = doc.tasks.filter((t) => t.id.startsWith('done-'));
    expect(factsOf(doc).tasks).toEqual([]);
    expect(hasActiveTasks(factsOf(doc))).toBe(false);
    expect(idleBoundaryDecision(idle(factsOf(doc))).kind).toBe('sleep');
  });

  it('counts queued and interrupted messages, and no other', async () => {
    const doc = await docWithPrompt();
    const shape = doc.queue[0] as AgentDoc['queue'][number];
    const statuses = ['queued', 'processed', 'interrupted', 'queued', 'dequeued', 'processed', 'aborted'] as const;
    doc.queue = statuses.map((status, i) => ({ ...shape, id: `m-${i}`, seq: i + 1, status }));
    expect(factsOf(doc).queue).toEqual({ queued: 2, interrupted: 1 });
  });
});
