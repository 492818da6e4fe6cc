import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { eventsOfType, eventually, tempDataDir, untilAsleep } from './helpers.js';

/** Counts the commits that record new command tasks. */
class CountingStore extends MemoryStore {
  recordCommits = 0;

  override commit(commit: Commit): Promise<CommitResult> {
    if (commit.events.some((e) => e.type === 'task_status_changed' && e.payload['status'] === 'queued')) this.recordCommits += 1;
    return super.commit(commit);
  }
}

async function withRuntime(test: (runtime: Runtime, store: CountingStore) => Promise<void>): Promise<void> {
  const data = tempDataDir();
  const store = new CountingStore();
  const runtime = await Runtime.open({ store, dataDir: data.dir, nodeId: 'shared-commands', killGraceMs: 300 });
  try {
    await test(runtime, store);
  } finally {
    await runtime.close();
    data.cleanup();
  }
}

const command = (i: number, extra: { work_item_id?: string } = {}) => ({ summary: `t${i}`, cmd: `echo shared-${i}`, accepts_input: false, ...extra });

describe('ExecCommand requests arriving together', () => {
  it('are recorded by shared operations, each once, in the order they were made, and each launched', async () => {
    await withRuntime(async (runtime, store) => {
      await runtime.createAgent({ agent_id: 's' });
      await untilAsleep(runtime, 's');
      const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => runtime.execCommand('s', command(i))));
      expect(tasks.map((t) => t.summary)).toEqual(Array.from({ length: 20 }, (_, i) => `t${i}`));
      expect(new Set(tasks.map((t) => t.id)).size).toBe(20);
      expect(store.recordCommits).toBeLessThan(20);
      const queued = (await eventsOfType(runtime, 's', 'task_status_changed')).filter((e) => e.payload['status'] === 'queued');
      expect(queued.map((e) => e.payload['task_id'])).toEqual(tasks.map((t) => t.id));
      await eventually(async () => {
        const states = await Promise.all(tasks.map((t) => runtime.getTask('s', t.id)));
        return states.every((t) => t.status === 'completed') || undefined;
      }, 20_000, 'every task to complete');
    });
  });

  it('a request the agent refuses fails alone; the others sharing its operation are recorded', async () => {
    await withRuntime(async (runtime) => {
      await runtime.createAgent({ agent_id: 'r' });
      await untilAsleep(runtime, 'r');
      const settled = await Promise.allSettled([runtime.execCommand('r', command(0)), runtime.execCommand('r', command(1, { work_item_id: 'wi_missing' })), runtime.execCommand('r', command(2))]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      const refused = settled[1] as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(DomainError);
      expect((refused.reason as DomainError).code).toBe('work_item_not_found');
      const queued = (await eventsOfType(runtime, 'r', 'task_status_changed')).filter((e) => e.payload['status'] === 'queued');
      expect(queued.map((e) => e.payload['summary'])).toEqual(['t0', 't2']);
    });
  });

  it('requests to an unknown agent all fail, and leave nothing behind for later requests to join', async () => {
    await withRuntime(async (runtime) => {
      const settled = await Promise.allSettled([runtime.execCommand('ghost', command(0)), runtime.execCommand('ghost', command(1))]);
      expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as DomainError).code : 'fulfilled'))).toEqual(['agent_not_found', 'agent_not_found']);
      await runtime.createAgent({ agent_id: 'ghost' });
      await untilAsleep(runtime, 'ghost');
      const task = await runtime.execCommand('ghost', command(2));
      expect((await runtime.getTask('ghost', task.id)).summary).toBe('t2');
    });
  });

  it('requests to a stopped agent fail with agent_stopped and change nothing', async () => {
    await withRuntime(async (runtime) => {
      await runtime.createAgent({ agent_id: 'x' });
      await untilAsleep(runtime, 'x');
      await runtime.control('x', { action: 'stop' });
      const before = (await runtime.getState('x')).tasks.length;
      const settled = await Promise.allSettled([runtime.execCommand('x', command(0)), runtime.execCommand('x', command(1))]);
      expect(settled.map((s) => (s.status === 'rejected' ? (s.reason as DomainError).code : 'fulfilled'))).toEqual(['agent_stopped', 'agent_stopped']);
      expect((await runtime.getState('x')).tasks.length).toBe(before);
    });
  });
});
