import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

/** Throws, synchronously, from the next commit that queues a message while `failNext` is set. */
class ThrowingStore extends MemoryStore {
  failNext = false;

  override commit(commit: Commit): Promise<CommitResult> {
    if (this.failNext && commit.events.some((e) => e.type === 'message_queued')) {
      this.failNext = false;
      throw new DomainError('store_unavailable', 'the store refused the commit at once');
    }
    return super.commit(commit);
  }
}

describe('an input refused after its room was reserved', () => {
  it('gives the room back (ingressMaxInFlight 1): a version conflict and a store that throws at once are rejections, and the next input is accepted', async () => {
    const store = new ThrowingStore();
    const runtime = await Runtime.open({ store, nodeId: 'ingress-room', ingressMaxInFlight: 1 });
    try {
      await runtime.createAgent({ agent_id: 'r', config: { turn_runner: 'http_worker', model: 'external' } });
      await untilAsleep(runtime, 'r');
      await expect(runtime.prompt('r', { text: 'stale' }, { expected_version: 999 })).rejects.toMatchObject({ code: 'version_conflict' });
      store.failNext = true;
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
});
