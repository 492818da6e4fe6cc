import { describe, expect, it } from 'vitest';
import type { AgentListEntry } from '../../src/domain/index.js';
import { createAgent, expectError, serverSession, settled, type Reply } from './helpers.js';

/**
 * Issue 15.1 over a real socket: concurrent requests with one Idempotency-Key make one effect;
 * the later ones wait for the first and replay its answer (`Idempotent-Replay: true`).
 */

const { api } = serverSession();

const concurrently = <T>(n: number, send: () => Promise<Reply<T>>): Promise<Array<Reply<T>>> => Promise.all(Array.from({ length: n }, send));
const replays = (replies: Reply[]) => replies.filter((r) => r.headers.get('idempotent-replay') === 'true').length;
const eventsOf = async (agentId: string) =>
  (await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agentId}/events?limit=512`)).body.events;

describe('one Idempotency-Key, five concurrent requests', () => {
  it('POST /api/control/agents without agent_id: one agent per key, round after round', async () => {
    for (let round = 0; round < 4; round++) {
      const mission = `concurrent create ${process.pid} ${round}`;
      const replies = await concurrently(5, () => api.post<{ identity: { agent_id: string } }>('/api/control/agents', { mission }, { 'idempotency-key': `create-race-${process.pid}-${round}` }));
      expect(replies.map((r) => r.status), replies.map((r) => r.text).join('\n')).toEqual([201, 201, 201, 201, 201]);
      expect(new Set(replies.map((r) => r.body.identity.agent_id)).size).toBe(1);
      expect(replays(replies)).toBe(4);
      const listed: AgentListEntry[] = (await api.get<{ items: AgentListEntry[] }>('/api/agents/list?limit=512')).body.items;
      const missions = await Promise.all(listed.map(async (e) => (await api.get<{ identity: { mission: string } }>(`/api/agents/${e.agent_id}/status`)).body.identity.mission));
      expect(missions.filter((m) => m === mission)).toHaveLength(1);
    }
  });

  it('the same key with another body is a conflict, even while the first is in flight', async () => {
    const key = { 'idempotency-key': `create-conflict-${process.pid}` };
    const [first, second] = await Promise.all([api.post('/api/control/agents', { mission: 'one' }, key), api.post('/api/control/agents', { mission: 'two' }, key)]);
    expect([first.status, second.status].sort()).toEqual([201, 409]);
    expectError(first.status === 409 ? first : second, 409, 'idempotency_conflict');
  });

  interface RouteCase {
    name: string;
    path: (agentId: string) => string;
    body: Record<string, unknown>;
    status: number;
    /** Events the effect commits once. */
    effect: (e: { type: string; payload: Record<string, unknown> }) => boolean;
    /** A field only the first answer shows (a capability URL: its token is never stored). */
    shownOnce?: string;
  }

  const routes: RouteCase[] = [
    { name: 'prompt', path: (id) => `/api/control/agents/${id}/prompt`, body: { text: 'race' }, status: 200, effect: (e) => e.type === 'message_queued' && e.payload['kind'] === 'operator_prompt' },
    { name: 'enqueue', path: (id) => `/api/agents/${id}/enqueue`, body: { text: 'race' }, status: 200, effect: (e) => e.type === 'message_queued' && e.payload['kind'] === 'webhook_event' },
    { name: 'wake', path: (id) => `/api/control/agents/${id}/wake`, body: { reason: 'race' }, status: 200, effect: (e) => e.type === 'wake_hint' },
    { name: 'work item', path: (id) => `/api/control/agents/${id}/work-items`, body: { objective: 'race' }, status: 201, effect: (e) => e.type === 'work_item_created' },
    { name: 'timer', path: (id) => `/api/control/agents/${id}/timers`, body: { duration_ms: 3_600_000 }, status: 201, effect: (e) => e.type === 'timer_created' },
    { name: 'wait', path: (id) => `/api/control/agents/${id}/waits`, body: { wake: 'external', reason: 'race' }, status: 201, effect: (e) => e.type === 'wait_created' },
    { name: 'trigger', path: (id) => `/api/control/agents/${id}/triggers`, body: { delivery_mode: 'wake_hint' }, status: 201, effect: (e) => e.type === 'trigger_created' && e.payload['is_default'] === false, shownOnce: 'trigger_url' },
    { name: 'command task', path: (id) => `/api/control/agents/${id}/tasks`, body: { summary: 'race', cmd: 'true' }, status: 201, effect: (e) => e.type === 'task_status_changed' && e.payload['status'] === 'queued' },
    { name: 'snapshot', path: (id) => `/api/control/agents/${id}/snapshots`, body: {}, status: 201, effect: (e) => e.type === 'snapshot_taken' && e.payload['kind'] === 'on_request' },
    { name: 'stop', path: (id) => `/api/control/agents/${id}/control`, body: { action: 'stop' }, status: 200, effect: (e) => e.type === 'control_applied' },
  ];

  it.each(routes)('$name: one effect, four replays of the same answer', async ({ path, body, status, effect, shownOnce }) => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await settled(api, agent.id);
    const replies = await concurrently(5, () => api.post(path(agent.id), body, { 'idempotency-key': `race-${agent.id}` }));
    expect(replies.map((r) => r.status), replies[0]?.text).toEqual(Array(5).fill(status));
    expect(replays(replies)).toBe(4);
    const first = replies.find((r) => r.headers.get('idempotent-replay') !== 'true')?.body as Record<string, unknown>;
    const { [shownOnce ?? '']: once, ...rest } = first;
    if (shownOnce) expect(once).toEqual(expect.any(String));
    for (const reply of replies.filter((r) => r.headers.get('idempotent-replay') === 'true')) expect(reply.body).toEqual(shownOnce ? rest : first);
    expect((await eventsOf(agent.id)).filter(effect)).toHaveLength(1);
  });
});
