import { afterEach, describe, expect, it } from 'vitest';
import { readEvents } from './fixtures/data-dir.js';
import { settled, TempDirs, Workers } from './fixtures/harness.js';
import type { CrashRuleInput } from './fixtures/protocol.js';

/**
 * Issue 15.1: an Idempotency-Key is recorded in the very commit that makes its request's effect
 * durable. A SIGKILL just before that commit leaves neither (the retry acts, once); just after it
 * leaves both (the retry replays, acting never again) — for every keyed mutation, not only create.
 */

const dirs = new TempDirs();
let workers: Workers;

afterEach(async () => {
  await workers?.cleanup();
  await dirs.cleanup();
});

interface Case {
  name: string;
  /** The runtime method, its arguments before the options, and the event its effect commits. */
  method: string;
  args: (agentId: string) => unknown[];
  effect: { type: string; payload?: Record<string, unknown> };
}

const cases: Case[] = [
  { name: 'prompt', method: 'prompt', args: (id) => [id, { text: 'exactly once' }], effect: { type: 'message_queued', payload: { kind: 'operator_prompt' } } },
  { name: 'enqueue', method: 'enqueue', args: (id) => [id, { kind: 'webhook_event', priority: 'normal', text: 'hook' }], effect: { type: 'message_queued', payload: { kind: 'webhook_event' } } },
  { name: 'work item', method: 'createWorkItem', args: (id) => [id, { objective: 'once' }], effect: { type: 'work_item_created' } },
  { name: 'timer', method: 'createTimer', args: (id) => [id, { duration_ms: 3_600_000 }], effect: { type: 'timer_created' } },
  { name: 'trigger', method: 'createTrigger', args: (id) => [id, { delivery_mode: 'enqueue_message' }], effect: { type: 'trigger_created', payload: { is_default: false } } },
  { name: 'command task', method: 'execCommand', args: (id) => [id, { summary: 'once', cmd: 'true', accepts_input: false }], effect: { type: 'task_status_changed', payload: { status: 'queued' } } },
];

async function effectsOf(dataDir: string, agentId: string, effect: Case['effect']): Promise<number> {
  const events = await readEvents(dataDir, agentId);
  return events.filter((e) => e.type === effect.type && Object.entries(effect.payload ?? {}).every(([k, v]) => e.payload[k] === v)).length;
}

describe('keyed mutations across kill -9', () => {
  it.each(cases)('$name: killed before or after the commit that carries the key, the retry makes exactly one effect', async ({ method, args, effect }) => {
    const dataDir = await dirs.make();
    workers = new Workers({ dataDir, nodeId: 'keys', leaseTtlMs: 300 });
    const points: CrashRuleInput['at'][] = ['before_commit', 'after_commit'];
    let worker = await workers.open();
    for (const at of points) {
      const agentId = `keyed-${method}-${at}`;
      await worker.call('createAgent', { agent_id: agentId });
      await settled(worker, agentId);
      const before = await effectsOf(dataDir, agentId, effect);
      const options = { idempotency: { key: `retry-${at}`, fingerprint: `${method} ${agentId}` } };
      await worker.arm([{ at, event: effect }]);
      const outcome = await worker.attempt(method, ...args(agentId), options).then(
        () => 'acknowledged',
        () => 'killed',
      );
      expect(outcome, at).toBe('killed');
      expect(await effectsOf(dataDir, agentId, effect), `${at}: what the crash left`).toBe(before + (at === 'after_commit' ? 1 : 0));
      worker = await workers.open();
      await worker.call(method, ...args(agentId), options);
      await worker.call(method, ...args(agentId), options);
      expect(await effectsOf(dataDir, agentId, effect), `${at}: after two retries`).toBe(before + 1);
    }
  });
});
