import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { textOf } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { eventsOfType, eventually, tempDataDir, untilAsleep } from './helpers.js';

/** Holds every commit that queues a message until the test releases (or fails) it; the rest pass. */
class GatedStore extends MemoryStore {
  held: Array<{ commit: Commit; release: (fail?: DomainError) => void }> = [];

  override commit(commit: Commit): Promise<CommitResult> {
    if (!commit.events.some((e) => e.type === 'message_queued')) return super.commit(commit);
    return new Promise((resolve, reject) => {
      this.held.push({
        commit,
        release: (fail) => (fail ? reject(fail) : super.commit(commit).then(resolve, reject)),
      });
    });
  }
}

async function gatedAgent(): Promise<{ runtime: Runtime; store: GatedStore }> {
  const store = new GatedStore();
  const runtime = await Runtime.open({ store, nodeId: 'pipelined' });
  await runtime.createAgent({ agent_id: 'p', config: { turn_runner: 'http_worker', model: 'external' } });
  await untilAsleep(runtime, 'p');
  return { runtime, store };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('pipelined lane', () => {
  it('starts the next input while the last commit is not durable, and answers each caller only once its own commit is', async () => {
    const { runtime, store } = await gatedAgent();
    try {
      const answered: string[] = [];
      const prompts = ['one', 'two', 'three'].map((text) => runtime.prompt('p', { text }).then((r) => answered.push(text) && r));
      for (let i = 0; i < 5; i++) await tick();
      // All three were handed to the store, each built on the one before; nobody heard back.
      const base = store.held[0]?.commit.expected_version ?? -1;
      expect(store.held.map((h) => h.commit.expected_version)).toEqual([base, base + 1, base + 2]);
      expect(answered).toEqual([]);
      // Readers see durable state only.
      expect((await runtime.getState('p')).queue).toEqual([]);
      store.held[0]?.release();
      await tick();
      expect(answered).toEqual(['one']);
      store.held[1]?.release();
      store.held[2]?.release();
      await Promise.all(prompts);
      expect(answered).toEqual(['one', 'two', 'three']);
    } finally {
      await runtime.close();
    }
  });

  it('a refused commit fails the inputs built on it and the lane goes on from the durable state', async () => {
    const { runtime, store } = await gatedAgent();
    try {
      const results = ['kept', 'refused', 'built on refused'].map((text) => runtime.prompt('p', { text }).then(() => 'ok', (e: DomainError) => e.code));
      for (let i = 0; i < 5; i++) await tick();
      expect(store.held).toHaveLength(3);
      store.held[0]?.release();
      store.held[1]?.release(new DomainError('store_unavailable', 'disk full'));
      store.held[2]?.release();
      expect(await Promise.all(results)).toEqual(['ok', 'store_unavailable', 'version_conflict']);
      // The agent goes on from what was durable: the first input is there, the others are not, and a new one is taken.
      const next = runtime.prompt('p', { text: 'after' });
      for (let i = 0; i < 5; i++) await tick();
      store.held.at(-1)?.release();
      await next;
      const texts = (await runtime.getState('p')).queue.map((m) => textOf(m.body));
      expect(texts).toEqual(expect.arrayContaining(['kept', 'after']));
      expect(texts).not.toContain('refused');
      expect(texts).not.toContain('built on refused');
    } finally {
      for (const held of store.held) held.release();
      await runtime.close();
    }
  });
});

/** Counts the commits that mark commands running, and those that record commands finished. */
class CountingStore extends MemoryStore {
  launchCommits = 0;
  resultCommits = 0;

  override commit(commit: Commit): Promise<CommitResult> {
    const statuses = commit.events.filter((e) => e.type === 'task_status_changed').map((e) => e.payload['status']);
    if (statuses.includes('running')) this.launchCommits += 1;
    if (statuses.includes('completed')) this.resultCommits += 1;
    return super.commit(commit);
  }
}

describe('task launches and results', () => {
  it('commands requested together are launched, and their results recorded, by shared operations, each exactly once', async () => {
    const data = tempDataDir();
    const store = new CountingStore();
    const runtime = await Runtime.open({ store, dataDir: data.dir, nodeId: 'launches', killGraceMs: 300 });
    try {
      await runtime.createAgent({ agent_id: 'l' });
      await untilAsleep(runtime, 'l');
      const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => runtime.execCommand('l', { summary: `t${i}`, cmd: `echo task-${i}`, accepts_input: false })));
      await eventually(async () => {
        const states = await Promise.all(tasks.map((t) => runtime.getTask('l', t.id)));
        return states.every((t) => t.status === 'completed') || undefined;
      }, 20_000, 'every task to complete');
      const running = (await eventsOfType(runtime, 'l', 'task_status_changed')).filter((e) => e.payload['status'] === 'running');
      expect(running.map((e) => e.payload['task_id']).sort()).toEqual(tasks.map((t) => t.id).sort());
      expect(store.launchCommits).toBeLessThan(tasks.length);
      const completed = (await eventsOfType(runtime, 'l', 'task_status_changed')).filter((e) => e.payload['status'] === 'completed');
      expect(completed.map((e) => e.payload['task_id']).sort()).toEqual(tasks.map((t) => t.id).sort());
      expect(store.resultCommits).toBeLessThan(tasks.length);
      // Each result re-enters the agent as its own message.
      const results = (await eventsOfType(runtime, 'l', 'message_queued')).filter((e) => e.payload['kind'] === 'task_result');
      expect(results.map((e) => e.payload['task_id']).sort()).toEqual(tasks.map((t) => t.id).sort());
    } finally {
      await runtime.close();
      data.cleanup();
    }
  });
});
