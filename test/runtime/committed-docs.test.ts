import { describe, expect, it } from 'vitest';
import { Runtime } from '../../src/runtime/runtime.js';
import { MemoryStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { eventsOfType, eventually, processedMessageIds, tempDataDir, untilAsleep } from './helpers.js';

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}

/**
 * The store owns a committed document (Store.commit), and the runtime's next drafts share the parts
 * of it that are never edited in place (copyDoc). Freezing every committed document makes an edit
 * in place throw, so the operation that tried it fails instead of silently changing committed state.
 */
class FreezingStore extends MemoryStore {
  override async commit(commit: Commit): Promise<CommitResult> {
    deepFreeze(commit.doc);
    return super.commit(commit);
  }
}

describe('committed documents are never edited in place', () => {
  it('turns, tasks (stopped, invocations), waits, work items, timers, hints, client transitions, stop/start and terminate all work on frozen commits', async () => {
    const data = tempDataDir();
    const store = new FreezingStore();
    const runtime = await Runtime.open({ store, dataDir: data.dir, killGraceMs: 300 });
    try {
      await runtime.createAgent({ agent_id: 'frozen' });
      await untilAsleep(runtime, 'frozen');
      const turns = async () => (await eventsOfType(runtime, 'frozen', 'turn_finished')).filter((e) => typeof e.payload['run_id'] === 'string' && e.payload['note'] === undefined).length;
      const promptTurn = async (text: string): Promise<void> => {
        const before = await turns();
        await runtime.prompt('frozen', { text });
        await eventually(async () => (await turns()) > before || undefined, 10_000, `the turn for ${text}`);
      };
      for (const text of ['hello', '/exec-wait echo from-task', '/timer 10', '/enqueue follow up', '/fail on purpose', '/work keep it going']) await promptTurn(text);
      const [item] = (await runtime.getState('frozen')).work_items;
      await promptTurn(`/complete ${item?.id ?? 'none'}`);
      // Every prompt, the task result, the timer tick and the enqueued follow-up each went through a
      // finished turn (a turn may take several of them: issue 18's drain).
      await eventually(async () => (await processedMessageIds(runtime, 'frozen')).size >= 10 || undefined, 10_000, 'ten messages through finished turns');
      await untilAsleep(runtime, 'frozen');
      expect((await runtime.getState('frozen')).work_items.map((w) => w.state)).toEqual(['completed']);
      const task = (await eventsOfType(runtime, 'frozen', 'task_status_changed')).find((e) => e.payload['status'] === 'completed');
      expect(task).toBeDefined();

      const command = await runtime.execCommand('frozen', { summary: 'direct', cmd: 'echo direct', accepts_input: false });
      await eventually(async () => ((await runtime.getTask('frozen', command.id)).status === 'completed' ? true : undefined));
      expect((await runtime.wake('frozen', { reason: 'poke' })).disposition).not.toBe('ignored');
      // Queued messages commit shallow drafts (RunOptions.shallow): the delivery count is a replaced record.
      await runtime.enqueue('frozen', { kind: 'webhook_event', text: 'hooked', priority: 'normal' });
      const hook = await runtime.createTrigger('frozen', { delivery_mode: 'enqueue_message' });
      const payload = { content_type: 'text/plain', body: Buffer.from('delivered') };
      await runtime.deliverCallback('enqueue_message', hook.token, payload);
      await runtime.deliverCallback('enqueue_message', hook.token, payload);
      const stored = (await store.loadAgent('frozen'))?.doc as { triggers: Array<{ id: string; delivery_count: number }> };
      expect(stored.triggers.find((t) => t.id === hook.trigger.id)?.delivery_count).toBe(2);
      const stopped = await runtime.execCommand('frozen', { summary: 'stopped', cmd: 'sleep 30', accepts_input: false });
      await eventually(async () => ((await runtime.getTask('frozen', stopped.id)).status === 'running' ? true : undefined));
      await runtime.stopTask('frozen', stopped.id);
      await eventually(async () => ((await runtime.getTask('frozen', stopped.id)).status === 'cancelled' ? true : undefined));
      const invoked = await runtime.invokeAgent('frozen', { prompt: 'child says hi', summary: 'delegate' });
      await eventually(async () => ((await runtime.getTask('frozen', invoked.id)).status === 'completed' ? true : undefined));
      const child = invoked.child_agent_id as string;
      await eventually(async () => (await eventsOfType(runtime, child, 'effect_recorded')).some((e) => e.payload['status'] === 'done') || undefined, 10_000, 'the child to record its delivered result');
      await untilAsleep(runtime, 'frozen');

      const version = (await runtime.getSummary('frozen')).state_version;
      const request = { transition_id: 'client-wake', to: 'active' as const, reason: 'operator', expected_version: version };
      const first = await runtime.transition('frozen', request);
      expect((await runtime.transition('frozen', request)).record).toEqual(first.record);
      await untilAsleep(runtime, 'frozen');

      await runtime.control('frozen', { action: 'stop' });
      await runtime.control('frozen', { action: 'start' });
      await runtime.takeSnapshot('frozen');
      await runtime.terminate('frozen');
      expect((await runtime.getSummary('frozen')).phase).toBe('terminated');
    } finally {
      await runtime.close();
      data.cleanup();
    }
  });
});
