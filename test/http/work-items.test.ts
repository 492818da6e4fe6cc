import { describe, expect, it } from 'vitest';
import { WorkItemView } from '../../src/domain/index.js';
import { WorkItemPage, WorkItemResponse } from '../../src/http/schemas.js';
import { createAgent, expectError, serverSession, type Wire } from './helpers.js';

const { api, server } = serverSession();

type Item = Wire<typeof WorkItemResponse>;

async function newItem(agentId: string, objective = 'ship it'): Promise<Item> {
  const reply = await api.post<Item>(`/api/control/agents/${agentId}/work-items`, { objective });
  expect(reply.status, reply.text).toBe(201);
  return WorkItemResponse.parse(reply.body);
}

describe('work items', () => {
  it('creates, reads and lists items with their scheduling state', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const item = await newItem(agent.id, '  trimmed objective  ');
    expect(item).toMatchObject({ ok: true, state: 'open', objective: 'trimmed objective', revision: 1 });
    expect(item.scheduling.scheduling_state).toEqual(expect.any(String));
    const one = await api.get(`/api/agents/${agent.id}/work-items/${item.id}`);
    expect(one.status).toBe(200);
    expect(WorkItemView.parse(one.body).id).toBe(item.id);
    await newItem(agent.id, 'second');
    const page = await api.get<Wire<typeof WorkItemPage>>(`/api/agents/${agent.id}/work-items?limit=1`);
    expect(page.status).toBe(200);
    expect(WorkItemPage.parse(page.body).items).toHaveLength(1);
    expect(page.body.next_cursor).toBe('1');
    const rest = await api.get<Wire<typeof WorkItemPage>>(`/api/agents/${agent.id}/work-items?limit=1&cursor=1`);
    expect(rest.body.items.map((i) => i.objective)).toEqual(['second']);
    expect(rest.body.next_cursor).toBeNull();
    expectError(await api.get(`/api/agents/${agent.id}/work-items?cursor=abc`), 400, 'invalid_request');
  });

  it('updates, picks and completes an item', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const item = await newItem(agent.id);
    const updated = await api.patch<Item>(`/api/control/agents/${agent.id}/work-items/${item.id}`, { plan_status: 'ready', blocked_by: 'waiting on review' });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ plan_status: 'ready', blocked_by: 'waiting on review', revision: 2 });
    const picked = await api.post<Item>(`/api/control/agents/${agent.id}/work-items/${item.id}/pick`, { reason: 'unblocked', clear_blocker: true });
    expect(picked.status, picked.text).toBe(200);
    expect(picked.body).toMatchObject({ blocked_by: null, scheduling: { is_current: true } });
    const bare = await api.post<Item>(`/api/control/agents/${agent.id}/work-items/${item.id}/pick`);
    expect(bare.status, bare.text).toBe(200);
    const completed = await api.post<Item>(`/api/control/agents/${agent.id}/work-items/${item.id}/complete`, { report_text: 'done and dusted' });
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body.state).toBe('completed');
  });

  it('answers 400 for invalid bodies, 404 for unknown items and agents, 409 for a completed item', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const base = `/api/control/agents/${agent.id}/work-items`;
    expectError(await api.post(base, { objective: '   ' }), 400, 'invalid_request');
    expectError(await api.post(base, { objective: 'x', priority: 1 }), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/work-items', { objective: 'x' }), 404, 'agent_not_found');
    const item = await newItem(agent.id);
    expectError(await api.patch(`${base}/${item.id}`, {}), 400, 'invalid_request');
    expectError(await api.post(`${base}/${item.id}/pick`, { clear_blocker: true }), 400, 'invalid_request');
    expectError(await api.post(`${base}/${item.id}/complete`, { report_text: '' }), 400, 'invalid_request');
    expectError(await api.patch(`${base}/wi_missing`, { objective: 'x' }), 404, 'work_item_not_found');
    expectError(await api.post(`${base}/wi_missing/pick`, {}), 404, 'work_item_not_found');
    expectError(await api.post(`${base}/wi_missing/complete`, { report_text: 'x' }), 404, 'work_item_not_found');
    expectError(await api.get(`/api/agents/${agent.id}/work-items/wi_missing`), 404, 'work_item_not_found');
    await api.post(`${base}/${item.id}/complete`, { report_text: 'done' });
    expectError(await api.patch(`${base}/${item.id}`, { objective: 'again' }), 409, 'illegal_transition');
    expectError(await api.post(`${base}/${item.id}/pick`, {}), 409, 'illegal_transition');
  });
});
