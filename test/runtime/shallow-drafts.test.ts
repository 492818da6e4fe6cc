import { describe, expect, it } from 'vitest';
import type { AgentDoc } from '../../src/runtime/agent-doc.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { untilAsleep } from './helpers.js';

/** Keeps every committed document by agent and version, and which versions queued a message. */
class RecordingStore extends MemoryStore {
  readonly docs = new Map<string, AgentDoc>();
  readonly queued: Commit[] = [];

  override async commit(commit: Commit): Promise<CommitResult> {
    const result = await super.commit(commit);
    this.docs.set(`${commit.agent_id}@${result.version}`, commit.doc as AgentDoc);
    if (commit.events.some((e) => e.type === 'message_queued')) this.queued.push(commit);
    return result;
  }
}

describe('a queued message commits a shallow draft (RunOptions.shallow)', () => {
  it('shares every part of the version before except the fields a message changes, which it replaces', async () => {
    const store = new RecordingStore();
    const runtime = await Runtime.open({ store, nodeId: 'shallow' });
    try {
      // An external turn runner: the agent wakes for the message but runs no turn by itself.
      await runtime.createAgent({ agent_id: 's', config: { turn_runner: 'http_worker', model: 'external' } });
      await untilAsleep(runtime, 's');
      await runtime.enqueue('s', { kind: 'webhook_event', text: 'first', priority: 'normal' });
      const commit = store.queued.at(-1);
      const before = store.docs.get(`s@${commit?.expected_version}`);
      const after = commit?.doc as AgentDoc;
      expect(before).toBeDefined();
      if (!before) return;

      const changed = Object.keys(after).filter((key) => after[key as keyof AgentDoc] !== before[key as keyof AgentDoc]);
      expect(changed.sort()).toEqual(['last_commit_at', 'next_message_seq', 'queue', 'state']);
      expect(after.queue).toHaveLength(before.queue.length + 1);
      expect(after.queue.slice(0, -1).every((m, i) => m === before.queue[i])).toBe(true);
      expect(after.state.pending).toBe(before.state.pending + 1);
      // The version before is left as it was committed.
      expect(before.queue.some((m) => m.body?.type === 'text' && m.body.text === 'first')).toBe(false);
    } finally {
      await runtime.close();
    }
  });
});
