import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

/** Throws, synchronously, from the next commit that queues a message while `failNext` names an error code. */
class ThrowingStore extends MemoryStore {
  failNext: 'store_unavailable' | 'lease_lost' | null = null;

  override commit(commit: Commit): Promise<CommitResult> {
    const code = this.failNext;
    if (code !== null && commit.events.some((e) => e.type === 'message_queued')) {
      this.failNext = null;
      throw new DomainError(code, 'the store refused the commit at once');
    }
    return super.commit(commit);
  }
}

describe('an input or commit refused at once', () => {
  it('gives the room back (ingressMaxInFlight 1): a version conflict and a store that throws at once are rejections, and the next input is accepted', async () => {
    const store = new ThrowingStore();
    const runtime = await Runtime.open({ store, nodeId: 'ingress-room', ingressMaxInFlight: 1 });
    try {
      await runtime.createAgent({ agent_id: 'r', config: { turn_runner: 'http_worker', model: 'external' } });
      await untilAsleep(runtime, 'r');
      await expect(runtime.prompt('r', { text: 'stale' }, { expected_version: 999 })).rejects.toMatchObject({ code: 'version_conflict' });
      store.failNext = 'store_unavailable';
      await expect(runtime.prompt('r', { text: 'thrown' })).rejects.toMatchObject({ code: 'store_unavailable' });
      await untilAsleep(runtime, 'r');
      const accepted = await runtime.prompt('r', { text: 'after both' });
      expect(accepted.message_id).toMatch(/^msg/);
      const texts = (await runtime.getState('r')).queue.map((m) => (m.body?.type === 'text' ? m.body.text : null));
      expect(texts).toContain('after both');
      expect(texts).not.toContain('stale');
      expect(texts).not.toContain('thrown');
    } finally {
      await runtime.close();
    }
  });

  it('reports a commit fenced at once like one the store fences later: lease_lost marks the write lease lost (readiness)', async () => {
    const store = new ThrowingStore();
    const runtime = await Runtime.open({ store, nodeId: 'fenced-at-once' });
    try {
      await runtime.createAgent({ agent_id: 'f', config: { turn_runner: 'http_worker', model: 'external' } });
      await untilAsleep(runtime, 'f');
      expect((await runtime.readiness()).lease?.held).toBe(true);
      store.failNext = 'lease_lost';
      await expect(runtime.prompt('f', { text: 'fenced' })).rejects.toMatchObject({ code: 'lease_lost' });
      expect((await runtime.readiness()).lease?.held).toBe(false);
    } finally {
      await runtime.close();
    }
  });
});
