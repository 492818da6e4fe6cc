import { describe, expect, it } from 'vitest';
import type { AgentStateView } from '../../src/domain/index.js';
import { TriggerCreatedResponse, WaitResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

describe('waits', () => {
  it('creates a wait, replaces it with the next one and cancels', async () => {
    const agent = await createAgent(api);
    const first = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits`, { wake: 'external', reason: 'CI result' });
    expect(first.status, first.text).toBe(201);
    expect(WaitResponse.parse(first.body)).toMatchObject({ status: 'active', kind: 'external' });
    const second = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits`, { wake: 'operator_input' });
    expect(second.status).toBe(201);
    const summary = await api.get<{ active_wait_conditions: Array<{ id: string }> }>(`/api/agents/${agent.id}/status`);
    expect(summary.body.active_wait_conditions.map((w) => w.id)).toEqual([second.body.id]);
    const cancelled = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits/${second.body.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
  });

  it('answers 400 for invalid waits, 404 for unknown waits, resources and agents', async () => {
    const agent = await createAgent(api);
    const path = `/api/control/agents/${agent.id}/waits`;
    expectError(await api.post(path, { wake: 'forever' }), 400, 'invalid_request');
    expectError(await api.post(path, { wake: 'timer' }), 400, 'invalid_request');
    expectError(await api.post(path, { wake: 'external', wake_at: 'tomorrow' }), 400, 'invalid_request');
    expectError(await api.post(path, { wake: 'task_result', resource: 'task_missing' }), 404, 'task_not_found');
    expectError(await api.post(path, { wake: 'timer', resource: 'tmr_missing' }), 404, 'timer_not_found');
    expectError(await api.post(`${path}/wait_missing/cancel`), 404, 'wait_not_found');
    expectError(await api.post('/api/control/agents/nobody/waits', { wake: 'external' }), 404, 'agent_not_found');
  });
});

describe('which message ends which wait (holon-reference §6.8)', () => {
  const activeWaits = async (agentId: string) => (await api.get<AgentStateView>(`/api/agents/${agentId}/state`)).body.waits.map((w) => w.id);
  const mint = async (agentId: string) => (await api.post<Wire<typeof TriggerCreatedResponse>>(`/api/control/agents/${agentId}/triggers`, { delivery_mode: 'enqueue_message' })).body;
  const deliver = (url: string) => call(server().base, 'POST', new URL(url).pathname, { raw: 'news', headers: { 'content-type': 'text/plain' } });
  const turnsOf = async (agentId: string) => (await api.get<{ agent: { turn_index: number } }>(`/api/agents/${agentId}/status`)).body.agent.turn_index;

  it("an external wait on one trigger is ended by that trigger's callback, not by another's", async () => {
    const agent = await createAgent(api);
    const [a, b] = [await mint(agent.id), await mint(agent.id)];
    const wait = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits`, { wake: 'external', resource: a.trigger.id, reason: 'build A' });
    expect(wait.status, wait.text).toBe(201);
    const before = await turnsOf(agent.id);
    expect((await deliver(String(b.trigger_url))).status).toBe(200);
    // The callback through B ran its turn and left the wait on A alone.
    await waitFor(async () => (await turnsOf(agent.id)) > before);
    expect(await activeWaits(agent.id)).toEqual([wait.body.id]);
    expect((await deliver(String(a.trigger_url))).status).toBe(200);
    await waitFor(async () => (await activeWaits(agent.id)).length === 0);
  });

  it('a control wake hint (no capability) ends a system wait, not an external one', async () => {
    const agent = await createAgent(api);
    const external = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits`, { wake: 'external', reason: 'a webhook' });
    const system = await api.post<Wire<typeof WaitResponse>>(`/api/control/agents/${agent.id}/waits`, { wake: 'system', reason: 'a nudge', work_item_id: (await api.post<{ id: string }>(`/api/control/agents/${agent.id}/work-items`, { objective: 'later' })).body.id });
    expect([external.status, system.status]).toEqual([201, 201]);
    const before = await turnsOf(agent.id);
    expect((await api.post(`/api/control/agents/${agent.id}/wake`, { reason: 'nudge' })).status).toBe(200);
    await waitFor(async () => (await turnsOf(agent.id)) > before);
    await waitFor(async () => (await activeWaits(agent.id)).length === 1);
    expect(await activeWaits(agent.id)).toEqual([external.body.id]);
  });
});
