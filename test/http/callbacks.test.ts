import { describe, expect, it } from 'vitest';
import type { AgentStateView } from '../../src/domain/index.js';
import { CallbackResponse, TriggerCreatedResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, settled, type Wire } from './helpers.js';

const CONTROL_TOKEN = 'control-token-for-log-test';
const { api, server } = serverSession({ captureLogs: true, token: CONTROL_TOKEN });

const path = (url: string): string => new URL(url).pathname;
const newestSeq = async (id: string): Promise<number> =>
  (await api.get<{ newest_seq: number }>(`/api/agents/${id}/events?limit=1`)).body.newest_seq;

async function enqueueCapability(agentId: string): Promise<string> {
  const reply = await api.post<Wire<typeof TriggerCreatedResponse>>(`/api/control/agents/${agentId}/triggers`, { delivery_mode: 'enqueue_message' });
  expect(reply.status).toBe(201);
  return String(reply.body.trigger_url);
}

describe('POST /callbacks/wake/:token', () => {
  it.each([
    ['text/plain', 'deploy finished'],
    ['application/json', '{"build":"green"}'],
    ['application/octet-stream', '\u0000\u0001binary'],
    ['application/x-www-form-urlencoded', 'a=1&b=2'],
  ])('accepts a raw %s body without the control token', async (contentType, raw) => {
    const agent = await createAgent(api);
    const reply = await call(server().base, 'POST', path(agent.triggerUrl), { raw, headers: { 'content-type': contentType } });
    expect(reply.status, reply.text).toBe(200);
    expect(CallbackResponse.parse(reply.body)).toMatchObject({ agent_id: agent.id, delivery_mode: 'wake_hint' });
  });

  it('accepts an empty body without a content type', async () => {
    const agent = await createAgent(api);
    const reply = await call(server().base, 'POST', path(agent.triggerUrl));
    expect(reply.status, reply.text).toBe(200);
  });

  it('answers 403 for an unknown token or the wrong mode, with no side effect and no token echoed', async () => {
    const agent = await createAgent(api);
    const token = agent.token;
    // Its own sleep after creation would add events between the two counts.
    await settled(api, agent.id);
    const before = await newestSeq(agent.id);
    const unknown = await call(server().base, 'POST', '/callbacks/wake/not-a-real-token', { raw: 'x' });
    expectError(unknown, 403, 'forbidden');
    const wrongMode = await call(server().base, 'POST', `/callbacks/enqueue/${token}`, { raw: 'x' });
    expectError(wrongMode, 403, 'forbidden');
    expect(wrongMode.text).not.toContain(token);
    expect(await newestSeq(agent.id)).toBe(before);
  });

  it('answers 413 payload_too_large above 256 KiB', async () => {
    const agent = await createAgent(api);
    const reply = await call(server().base, 'POST', path(agent.triggerUrl), { raw: 'x'.repeat(256 * 1024 + 1), headers: { 'content-type': 'text/plain' } });
    expectError(reply, 413, 'payload_too_large');
  });
});

describe('a callback body sent as JSON must be JSON', () => {
  it.each([
    ['wake', 'application/json'],
    ['wake', 'application/json; charset=utf-8'],
    ['enqueue', 'application/vnd.ci.event+json'],
    ['enqueue', 'application/json'],
  ])('POST /callbacks/%s with %s and a broken body → 400 invalid_json, nothing recorded', async (route, contentType) => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const url = route === 'wake' ? agent.triggerUrl : await enqueueCapability(agent.id);
    const before = await newestSeq(agent.id);
    const reply = await call(server().base, 'POST', path(url), { raw: '{"build":"gre', headers: { 'content-type': contentType } });
    expectError(reply, 400, 'invalid_json');
    expect(await newestSeq(agent.id)).toBe(before);
    const state = await api.get<AgentStateView>(`/api/agents/${agent.id}/state`);
    expect(state.body.queue).toEqual([]);
  });

  it.each([[undefined], ['text/plain'], ['application/octet-stream']])('the same bytes with content type %s are accepted as raw bytes', async (contentType) => {
    const agent = await createAgent(api);
    const url = await enqueueCapability(agent.id);
    const reply = await call(server().base, 'POST', path(url), { raw: '{"build":"gre', ...(contentType ? { headers: { 'content-type': contentType } } : {}) });
    expect(reply.status, reply.text).toBe(200);
    expect(CallbackResponse.parse(reply.body)).toMatchObject({ disposition: 'enqueued' });
  });
});

describe('POST /callbacks/enqueue/:token', () => {
  it('queues the raw body as an external event with provenance', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const url = await enqueueCapability(agent.id);
    const reply = await call(server().base, 'POST', path(url), { raw: 'incident opened', headers: { 'content-type': 'text/plain' } });
    expect(reply.status, reply.text).toBe(200);
    const result = CallbackResponse.parse(reply.body);
    expect(result).toMatchObject({ disposition: 'enqueued', message_id: expect.any(String) });
    const state = await api.get<AgentStateView>(`/api/agents/${agent.id}/state`);
    const events = await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agent.id}/events?limit=512`);
    expect(events.body.events).toContainEqual(
      expect.objectContaining({ type: 'message_queued', payload: expect.objectContaining({ message_id: result.message_id, kind: 'callback_event' }) }),
    );
    expect(state.status).toBe(200);
  });
});

describe('token hygiene', () => {
  it('never writes a capability token or the control token to the log', async () => {
    const agent = await createAgent(api);
    await call(server().base, 'POST', path(agent.triggerUrl), { raw: 'x' });
    await call(server().base, 'POST', `/callbacks/enqueue/${agent.token}`, { raw: 'x' });
    await call(server().base, 'POST', `/callbacks/wake/${agent.token}/extra`, { raw: 'x' });
    await call(server().base, 'POST', path(agent.triggerUrl), { raw: 'x'.repeat(300 * 1024) });
    await api.get('/api/agents/list');
    await call(server().base, 'GET', '/api/agents/list', { headers: { authorization: `Bearer ${CONTROL_TOKEN}-wrong` } });
    const log = server().logs.join('\n');
    expect(server().logs.length).toBeGreaterThan(0);
    expect(log).toContain('/callbacks/wake/[redacted]');
    expect(log).not.toContain(agent.token);
    expect(log).not.toContain(CONTROL_TOKEN);
  });
});
