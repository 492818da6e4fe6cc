import { describe, expect, it } from 'vitest';
import type { AgentSummary } from '../../src/domain/index.js';
import { CallbackResponse, TriggerCreatedResponse, TriggerResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, type Wire } from './helpers.js';

const { api, server } = serverSession();

type Created = Wire<typeof TriggerCreatedResponse>;
const deliver = (url: string, raw = 'ping') =>
  call(server().base, 'POST', new URL(url).pathname, { raw, headers: { 'content-type': 'text/plain' } });

describe('external triggers', () => {
  it('mints a capability URL shown once, which then delivers', async () => {
    const agent = await createAgent(api);
    const reply = await api.post<Created>(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'enqueue_message' });
    expect(reply.status, reply.text).toBe(201);
    const created = TriggerCreatedResponse.parse(reply.body);
    expect(created.trigger).toMatchObject({ delivery_mode: 'enqueue_message', status: 'active' });
    expect(created.trigger_url).toMatch(new RegExp(`^${server().base}/callbacks/enqueue/[A-Za-z0-9_-]+$`));
    const token = String(created.trigger_url).split('/').pop() as string;
    const summary = await api.get<AgentSummary>(`/api/agents/${agent.id}/status`);
    expect(summary.body.active_external_triggers.map((t) => t.id)).toContain(created.trigger.id);
    expect(summary.text).not.toContain(token);
    const delivered = await deliver(String(created.trigger_url), '{"build":"green"}');
    expect(delivered.status, delivered.text).toBe(200);
    expect(CallbackResponse.parse(delivered.body)).toMatchObject({ disposition: 'enqueued', external_trigger_id: created.trigger.id });
  });

  it('replays a retried mint with the same Idempotency-Key without the URL (the token is never stored)', async () => {
    const agent = await createAgent(api);
    const headers = { 'idempotency-key': `mint-${agent.id}` };
    const first = await api.post<Created>(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'wake_hint' }, headers);
    const again = await api.post<Created>(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'wake_hint' }, headers);
    expect(first.status).toBe(201);
    expect(first.body.trigger_url).toEqual(expect.any(String));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.trigger.id).toBe(first.body.trigger.id);
    expect(again.body).not.toHaveProperty('trigger_url');
    const summary = await api.get<AgentSummary>(`/api/agents/${agent.id}/status`);
    expect(summary.body.active_external_triggers).toHaveLength(2);
  });

  it('revokes a capability: its URL answers 403 afterwards', async () => {
    const agent = await createAgent(api);
    const created = await api.post<Created>(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'wake_hint' });
    const revoked = await api.post<Wire<typeof TriggerResponse>>(`/api/control/agents/${agent.id}/triggers/${created.body.trigger.id}/revoke`);
    expect(revoked.status, revoked.text).toBe(200);
    expect(TriggerResponse.parse(revoked.body).status).toBe('revoked');
    expectError(await deliver(String(created.body.trigger_url)), 403, 'forbidden');
  });

  it('rotates the default capability with reset-callback', async () => {
    const agent = await createAgent(api);
    const rotated = await api.post<Created>(`/api/control/agents/${agent.id}/reset-callback`);
    expect(rotated.status, rotated.text).toBe(201);
    const body = TriggerCreatedResponse.parse(rotated.body);
    expect(body.delivery_mode).toBe('wake_hint');
    expect(body.trigger_url).not.toBe(agent.triggerUrl);
    expectError(await deliver(agent.triggerUrl), 403, 'forbidden');
    expect((await deliver(String(body.trigger_url))).status).toBe(200);
  });

  it('answers 400 for a bad mode, 404 for unknown triggers and agents, 409 for a stopped agent', async () => {
    const agent = await createAgent(api);
    expectError(await api.post(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'email' }), 400, 'invalid_request');
    expectError(await api.post(`/api/control/agents/${agent.id}/triggers`, {}), 400, 'invalid_request');
    expectError(await api.post(`/api/control/agents/${agent.id}/triggers/trg_missing/revoke`), 404, 'trigger_not_found');
    expectError(await api.post('/api/control/agents/nobody/triggers', { delivery_mode: 'wake_hint' }), 404, 'agent_not_found');
    expectError(await api.post('/api/control/agents/nobody/reset-callback'), 404, 'agent_not_found');
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expectError(await api.post(`/api/control/agents/${agent.id}/triggers`, { delivery_mode: 'wake_hint' }), 409, 'agent_stopped');
    expectError(await api.post(`/api/control/agents/${agent.id}/reset-callback`), 409, 'agent_stopped');
  });
});
