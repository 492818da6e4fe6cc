import { describe, expect, it } from 'vitest';
import { TimerRecord } from '../../src/domain/index.js';
import { TimerPage, TimerResponse } from '../../src/http/schemas.js';
import { createAgent, expectError, serverSession, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

describe('timers', () => {
  it('creates, lists, reads and cancels a durable timer', async () => {
    const agent = await createAgent(api);
    const created = await api.post<Wire<typeof TimerResponse>>(`/api/control/agents/${agent.id}/timers`, { duration_ms: 3_600_000, summary: 'hourly check' });
    expect(created.status, created.text).toBe(201);
    const timer = TimerResponse.parse(created.body);
    expect(timer).toMatchObject({ status: 'active', fire_count: 0, summary: 'hourly check' });
    const list = await api.get<Wire<typeof TimerPage>>(`/api/agents/${agent.id}/timers`);
    expect(TimerPage.parse(list.body).items.map((t) => t.id)).toContain(timer.id);
    const one = await api.get(`/api/agents/${agent.id}/timers/${timer.id}`);
    expect(TimerRecord.parse(one.body).id).toBe(timer.id);
    const cancelled = await api.post<Wire<typeof TimerResponse>>(`/api/control/agents/${agent.id}/timers/${timer.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    const again = await api.post<Wire<typeof TimerResponse>>(`/api/control/agents/${agent.id}/timers/${timer.id}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('cancelled');
  });

  it('fires a due timer once and refuses to cancel it afterwards with 400 timer_completed', async () => {
    const agent = await createAgent(api);
    const created = await api.post<Wire<typeof TimerResponse>>(`/api/control/agents/${agent.id}/timers`, { duration_ms: 0 });
    expect(created.status).toBe(201);
    const fired = await waitFor(async () => {
      const reply = await api.get<TimerRecord>(`/api/agents/${agent.id}/timers/${created.body.id}`);
      return reply.body.status === 'completed' ? reply.body : undefined;
    });
    expect(fired.fire_count).toBe(1);
    expectError(await api.post(`/api/control/agents/${agent.id}/timers/${created.body.id}/cancel`), 400, 'timer_completed');
  });

  it('answers 400 for invalid timers and 404 for unknown timers and agents', async () => {
    const agent = await createAgent(api);
    const path = `/api/control/agents/${agent.id}/timers`;
    expectError(await api.post(path, { duration_ms: -1 }), 400, 'invalid_request');
    expectError(await api.post(path, { duration_ms: 10, interval_ms: 1 }), 400, 'invalid_request');
    expectError(await api.post(path, { duration_ms: '10' }), 400, 'invalid_request');
    expectError(await api.post(`${path}/tmr_missing/cancel`), 404, 'timer_not_found');
    expectError(await api.get(`/api/agents/${agent.id}/timers/tmr_missing`), 404, 'timer_not_found');
    expectError(await api.post('/api/control/agents/nobody/timers', { duration_ms: 10 }), 404, 'agent_not_found');
  });
});
