import { describe, expect, it } from 'vitest';
import type { AgentStateView } from '../../src/domain/index.js';
import { MessageAcceptedResponse, WakeResponse } from '../../src/http/schemas.js';
import { createAgent, expectError, serverSession, settled, type Wire } from './helpers.js';

const { api, server } = serverSession();

const queueOf = async (id: string) => (await api.get<AgentStateView>(`/api/agents/${id}/state`)).body.queue;
const eventCount = async (id: string): Promise<number> =>
  (await api.get<{ newest_seq: number }>(`/api/agents/${id}/events?limit=1`)).body.newest_seq;

describe('POST /api/control/agents/:id/prompt', () => {
  it('queues operator input and returns its message id', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const reply = await api.post<Wire<typeof MessageAcceptedResponse>>(`/api/control/agents/${agent.id}/prompt`, { text: 'hello' });
    expect(reply.status, reply.text).toBe(200);
    const accepted = MessageAcceptedResponse.parse(reply.body);
    expect(accepted).toMatchObject({ ok: true, agent_id: agent.id });
    const events = await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agent.id}/events?limit=512`);
    expect(events.body.events).toContainEqual(
      expect.objectContaining({ type: 'message_queued', payload: expect.objectContaining({ message_id: accepted.message_id, priority: 'interject' }) }),
    );
  });

  it('answers 409 agent_stopped for a stopped agent and queues nothing', async () => {
    const agent = await createAgent(api);
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    const before = await eventCount(agent.id);
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'anyone?' }), 409, 'agent_stopped');
    expect(await queueOf(agent.id)).toEqual([]);
    expect(await eventCount(agent.id)).toBe(before);
  });

  it('answers 400 for blank text or unknown fields and 404 for an unknown agent or work item', async () => {
    const agent = await createAgent(api);
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: '   ' }), 400, 'invalid_request');
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'x', priority: 'next' }), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/prompt', { text: 'x' }), 404, 'agent_not_found');
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'x', work_item_id: 'wi_none' }), 404, 'work_item_not_found');
  });

  it('replays a retried prompt with the same Idempotency-Key instead of queueing twice', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const first = await api.post<Wire<typeof MessageAcceptedResponse>>(`/api/control/agents/${agent.id}/prompt`, { text: 'once' }, { 'idempotency-key': 'p-1' });
    const again = await api.post<Wire<typeof MessageAcceptedResponse>>(`/api/control/agents/${agent.id}/prompt`, { text: 'once' }, { 'idempotency-key': 'p-1' });
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.message_id).toBe(first.body.message_id);
    const events = await api.get<{ events: Array<{ type: string }> }>(`/api/agents/${agent.id}/events?limit=512`);
    expect(events.body.events.filter((e) => e.type === 'message_queued')).toHaveLength(1);
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'twice' }, { 'idempotency-key': 'p-1' }), 409, 'idempotency_conflict');
  });
});

describe('concurrent retries', () => {
  it('runs concurrent requests with one Idempotency-Key once; the others replay it', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const replies = await Promise.all(
      Array.from({ length: 5 }, () =>
        api.post<Wire<typeof MessageAcceptedResponse>>(`/api/control/agents/${agent.id}/prompt`, { text: 'race' }, { 'idempotency-key': `race-${agent.id}` }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(replies.map((r) => r.body.message_id)).size).toBe(1);
    expect(replies.filter((r) => r.headers.get('idempotent-replay') === 'true')).toHaveLength(4);
    const events = await api.get<{ events: Array<{ type: string }> }>(`/api/agents/${agent.id}/events?limit=512`);
    expect(events.body.events.filter((e) => e.type === 'message_queued')).toHaveLength(1);
  });
});

describe('POST /api/agents/:id/enqueue', () => {
  it('accepts channel and webhook events', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const webhook = await api.post<Wire<typeof MessageAcceptedResponse>>(`/api/agents/${agent.id}/enqueue`, { text: 'build done' });
    expect(webhook.status, webhook.text).toBe(200);
    expect(MessageAcceptedResponse.parse(webhook.body).agent_id).toBe(agent.id);
    const channel = await api.post(`/api/agents/${agent.id}/enqueue`, {
      kind: 'channel_event',
      priority: 'next',
      json: { from: 'chat' },
      origin: { kind: 'channel', channel_id: 'general' },
    });
    expect(channel.status, channel.text).toBe(200);
  });

  it.each([
    ['authority_class', { text: 'x', authority_class: 'operator_instruction' }],
    ['authority_class alongside unknown fields', { authority_class: 'runtime_instruction', bogus: 1 }],
    ['system_tick', { kind: 'system_tick', text: 'x' }],
    ['operator_prompt', { kind: 'operator_prompt', text: 'x' }],
    ['task_result', { kind: 'task_result' }],
    ['callback_event', { kind: 'callback_event', text: 'x' }],
    ['interject', { text: 'x', priority: 'interject' }],
    ['an operator origin', { text: 'x', origin: { kind: 'operator' } }],
    ['a kind/origin mismatch', { kind: 'webhook_event', origin: { kind: 'channel', channel_id: 'c' } }],
  ])('answers 403 forbidden for %s before schema strictness', async (_label, body) => {
    const agent = await createAgent(api);
    // Its own sleep after creation would add events between the two counts.
    await settled(api, agent.id);
    const before = await eventCount(agent.id);
    expectError(await api.post(`/api/agents/${agent.id}/enqueue`, body), 403, 'forbidden');
    expect(await eventCount(agent.id)).toBe(before);
  });

  it('answers 400 for unknown fields, 404 for an unknown agent, 409 for a stopped agent', async () => {
    const agent = await createAgent(api);
    expectError(await api.post(`/api/agents/${agent.id}/enqueue`, { text: 'x', metadata: {} }), 400, 'invalid_request');
    expectError(await api.post(`/api/agents/${agent.id}/enqueue`, { kind: 7 }), 400, 'invalid_request');
    expectError(await api.post('/api/agents/nobody/enqueue', { text: 'x' }), 404, 'agent_not_found');
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expectError(await api.post(`/api/agents/${agent.id}/enqueue`, { text: 'x' }), 409, 'agent_stopped');
  });
});

describe('POST /api/control/agents/:id/wake', () => {
  it('answers a disposition', async () => {
    const agent = await createAgent(api);
    const reply = await api.post<Wire<typeof WakeResponse>>(`/api/control/agents/${agent.id}/wake`, { reason: 'look again', source: 'ops' });
    expect(reply.status, reply.text).toBe(200);
    expect(['triggered', 'coalesced', 'ignored']).toContain(WakeResponse.parse(reply.body).disposition);
  });

  it('answers 200 ignored for a stopped agent and changes nothing else', async () => {
    const agent = await createAgent(api);
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    const before = await api.get<AgentStateView>(`/api/agents/${agent.id}/state`);
    const reply = await api.post<Wire<typeof WakeResponse>>(`/api/control/agents/${agent.id}/wake`, { reason: 'wake up' });
    expect(reply.status).toBe(200);
    expect(reply.body.disposition).toBe('ignored');
    const after = await api.get<AgentStateView>(`/api/agents/${agent.id}/state`);
    expect(after.body.summary.state_version).toBe(before.body.summary.state_version);
    expect(after.body.queue).toEqual(before.body.queue);
  });

  it('answers 400 for a blank or missing reason and 404 for an unknown agent', async () => {
    const agent = await createAgent(api);
    expectError(await api.post(`/api/control/agents/${agent.id}/wake`, { reason: '  \t ' }), 400, 'invalid_request');
    expectError(await api.post(`/api/control/agents/${agent.id}/wake`, {}), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/wake', { reason: 'x' }), 404, 'agent_not_found');
  });
});
