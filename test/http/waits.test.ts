import { describe, expect, it } from 'vitest';
import { WaitResponse } from '../../src/http/schemas.js';
import { createAgent, expectError, serverSession, type Wire } from './helpers.js';

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
