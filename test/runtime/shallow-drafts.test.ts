import { describe, expect, it } from 'vitest';
import { AgentCell, type CellEnv } from '../../src/runtime/agent/agent-cell.js';
import type { AgentDoc } from '../../src/runtime/agent/agent-doc.js';
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

  it('is the operation’s draft: the head’s top level and state copied, every other part the head’s own', async () => {
    const store = new RecordingStore();
    const runtime = await Runtime.open({ store, nodeId: 'shallow-draft' });
    await runtime.createAgent({ agent_id: 'd', config: { turn_runner: 'http_worker', model: 'external' } });
    await untilAsleep(runtime, 'd');
    const stored = await store.loadAgent('d');
    await runtime.close();
    const head = stored?.doc as AgentDoc;
    // Only the lane is exercised: nothing is committed (a draft only read is not), so no store, clock or actor is reached.
    const cell = new AgentCell('d', head, stored?.version ?? 0, { settled: () => undefined } as unknown as CellEnv);
    await cell.run(async (tx) => {
      expect(tx.doc).not.toBe(head);
      expect(tx.doc.state).not.toBe(head.state);
      expect(tx.doc.state).toEqual(head.state);
      for (const key of ['identity', 'config', 'triggers', 'queue', 'recent_keys', 'transitions'] as const) expect(tx.doc[key]).toBe(head[key]);
    }, { shallow: true });
    await cell.run(async (tx) => {
      for (const key of ['identity', 'config', 'triggers', 'recent_keys'] as const) expect(tx.doc[key]).not.toBe(head[key]);
      expect(tx.doc.identity).toEqual(head.identity);
    });
  });
});
