import { describe, expect, it } from 'vitest';
import { shutdownTracker } from '../../src/http/app.js';
import { TurnClaimResponse, TurnCompleteResponse, TurnHeartbeatResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, startServer, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

type Offer = Wire<typeof TurnClaimResponse>;

async function workerAgentWithTurn(): Promise<string> {
  const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
  const prompt = await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'please work' });
  expect(prompt.status).toBe(200);
  return agent.id;
}

async function claimFor(agentId: string): Promise<Offer> {
  const reply = await api.post<Offer>('/api/control/turns/claim', { agent_ids: [agentId], wait_ms: 5_000 });
  expect(reply.status, reply.text).toBe(200);
  return TurnClaimResponse.parse(reply.body);
}

describe('turn workers', () => {
  it('answers 204 when no turn is offered', async () => {
    const empty = await api.post('/api/control/turns/claim', { agent_ids: ['nobody-here'], wait_ms: 50 });
    expect(empty.status).toBe(204);
    expect(empty.text).toBe('');
    expect((await api.post('/api/control/turns/claim')).status).toBe(204);
  });

  it('offers the turn with its messages and the agent summary', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    expect(offer).toMatchObject({ agent_id: agentId, summary: { identity: { agent_id: agentId } } });
    expect(offer.messages.map((m) => m.kind)).toContain('operator_prompt');
    expect(offer.lease_ms).toBeGreaterThan(0);
  });

  it('extends the lease by heartbeat and answers 409 lease_lost for an unknown or finished turn', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    const beat = await api.post<Wire<typeof TurnHeartbeatResponse>>(`/api/control/turns/${encodeURIComponent(offer.run_id)}/heartbeat`, { claim_id: offer.claim_id });
    expect(beat.status, beat.text).toBe(200);
    expect(TurnHeartbeatResponse.parse(beat.body)).toMatchObject({ run_id: offer.run_id, claim_id: offer.claim_id });
    expectError(await api.post('/api/control/turns/run_unknown/heartbeat', { claim_id: offer.claim_id }), 409, 'lease_lost');
    expectError(await api.post(`/api/control/turns/${offer.run_id}/heartbeat`, { claim_id: 'claim_unknown' }), 409, 'lease_lost');
    expectError(await api.post(`/api/control/turns/${offer.run_id}/heartbeat`), 400, 'invalid_request');
  });

  it('a heartbeat with take_messages is a safe point: an operator prompt queued mid-turn joins the run, a webhook does not; a repeat answers the same list', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    const path = `/api/control/turns/${encodeURIComponent(offer.run_id)}`;
    const plain = await api.post<Wire<typeof TurnHeartbeatResponse>>(`${path}/heartbeat`, { claim_id: offer.claim_id });
    expect(TurnHeartbeatResponse.parse(plain.body).messages).toBeUndefined();
    const webhook = await api.post<{ message_id: string }>(`/api/agents/${agentId}/enqueue`, { text: 'an event' });
    const prompt = await api.post<{ message_id: string }>(`/api/control/agents/${agentId}/prompt`, { text: 'and one more thing' });
    expect([webhook.status, prompt.status]).toEqual([200, 200]);
    const beat = await api.post<Wire<typeof TurnHeartbeatResponse>>(`${path}/heartbeat`, { claim_id: offer.claim_id, take_messages: true });
    expect(beat.status, beat.text).toBe(200);
    const taken = TurnHeartbeatResponse.parse(beat.body).messages ?? [];
    expect(taken.map((m) => m.id)).toEqual([...offer.messages.map((m) => m.id), prompt.body.message_id]);
    expect(taken.at(-1)).toMatchObject({ status: 'dequeued', run_id: offer.run_id });
    // A lost answer loses nothing: the next heartbeat lists the run's messages again.
    const again = await api.post<Wire<typeof TurnHeartbeatResponse>>(`${path}/heartbeat`, { claim_id: offer.claim_id, take_messages: true });
    expect((TurnHeartbeatResponse.parse(again.body).messages ?? []).map((m) => m.id)).toEqual(taken.map((m) => m.id));
    const events = (await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agentId}/events?limit=512`)).body.events;
    expect(events.filter((e) => e.type === 'turn_interjected').map((e) => e.payload)).toEqual([expect.objectContaining({ run_id: offer.run_id, message_ids: [prompt.body.message_id] })]);
    // Completed, the run's messages are processed; the webhook is still queued for the next turn.
    const done = await api.post(`${path}/complete`, { claim_id: offer.claim_id, actions: [] });
    expect(done.status, done.text).toBe(200);
    const next = await claimFor(agentId);
    expect(next.messages.map((m) => m.id)).toEqual([webhook.body.message_id]);
    expectError(await api.post(`${path}/heartbeat`, { claim_id: offer.claim_id, take_messages: 'yes' }), 400, 'invalid_request');
  });

  it('applies a completion once; a second completion answers 409', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    const path = `/api/control/turns/${encodeURIComponent(offer.run_id)}/complete`;
    const done = await api.post<Wire<typeof TurnCompleteResponse>>(path, { claim_id: offer.claim_id, actions: [{ type: 'sleep' }], text: 'all done' });
    expect(done.status, done.text).toBe(200);
    expect(TurnCompleteResponse.parse(done.body)).toMatchObject({ run_id: offer.run_id, applied: true });
    const again = await api.post(path, { claim_id: offer.claim_id, actions: [] });
    expect(again.status).toBe(409);
  });

  it('names the run by one id everywhere: summary, list, events, claim, heartbeat, complete, abort', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    const summary = await api.get<{ agent: { current_run_id: string | null } }>(`/api/agents/${agentId}/status`);
    expect(offer.run_id).toBe(summary.body.agent.current_run_id);
    expect(offer.summary.agent.current_run_id).toBe(offer.run_id);
    const list = await api.get<{ items: Array<{ agent_id: string; current_run_id: string | null }> }>('/api/agents/list?limit=512');
    expect(list.body.items.find((e) => e.agent_id === agentId)?.current_run_id).toBe(offer.run_id);
    const events = await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agentId}/events?limit=512`);
    expect(events.body.events.filter((e) => e.type === 'turn_started').map((e) => e.payload['run_id'])).toEqual([offer.run_id]);
    const beat = await api.post(`/api/control/turns/${offer.run_id}/heartbeat`, { claim_id: offer.claim_id });
    expect(beat.status, beat.text).toBe(200);
    // A worker that compares or aborts by the run id it was given finds the agent's run.
    const aborted = await api.post<{ run_id: string }>(`/api/control/agents/${agentId}/current-run/abort`, { run_id: offer.run_id });
    expect(aborted.status, aborted.text).toBe(200);
    expect(aborted.body.run_id).toBe(offer.run_id);
    expectError(await api.post(`/api/control/turns/${offer.run_id}/complete`, { claim_id: offer.claim_id, actions: [] }), 409, 'lease_lost');
  });

  it('re-offers an expired turn under the same run id with a new claim id, and refuses the old claim', async () => {
    const own = await startServer({ runtime: { turnLeaseMs: 300 } });
    const ownApi = { post: <T>(path: string, json?: unknown) => call<T>(own.base, 'POST', path, json === undefined ? {} : { json }) };
    try {
      const created = await ownApi.post<{ identity: { agent_id: string } }>('/api/control/agents', { config: { turn_runner: 'http_worker' } });
      const agentId = created.body.identity.agent_id;
      await ownApi.post(`/api/control/agents/${agentId}/prompt`, { text: 'slow worker' });
      const first = (await ownApi.post<Offer>('/api/control/turns/claim', { agent_ids: [agentId], wait_ms: 5_000 })).body;
      const second = await waitFor(async () => {
        const reply = await ownApi.post<Offer>('/api/control/turns/claim', { agent_ids: [agentId], wait_ms: 200 });
        return reply.status === 200 ? reply.body : undefined;
      });
      expect(second.run_id).toBe(first.run_id);
      expect(second.claim_id).not.toBe(first.claim_id);
      expectError(await ownApi.post(`/api/control/turns/${first.run_id}/heartbeat`, { claim_id: first.claim_id }), 409, 'lease_lost');
      expectError(await ownApi.post(`/api/control/turns/${first.run_id}/complete`, { claim_id: first.claim_id, actions: [] }), 409, 'lease_lost');
      const done = await ownApi.post(`/api/control/turns/${second.run_id}/complete`, { claim_id: second.claim_id, actions: [] });
      expect(done.status, done.text).toBe(200);
    } finally {
      await own.close();
    }
  });

  it('answers 400 for invalid claims and completions', async () => {
    expectError(await api.post('/api/control/turns/claim', { wait_ms: 600_000 }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/claim', { agent: 'x' }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/run_x/complete', { actions: [{ type: 'teleport' }] }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/run_x/complete', {}), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/run_x/complete', { actions: [] }), 400, 'invalid_request');
  });

  it('releases a long poll whose client went away: the next claim gets the turn', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const controller = new AbortController();
    const abandoned = fetch(`${server().base}/api/control/turns/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent_ids: [agent.id], wait_ms: 60_000 }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await abandoned;
    await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'for the next worker' });
    const offer = await claimFor(agent.id);
    expect(offer.agent_id).toBe(agent.id);
  });

  it('ends a pending long poll with 204 when the server shuts down', async () => {
    const own = await startServer();
    const pending = call(own.base, 'POST', '/api/control/turns/claim', { json: { wait_ms: 60_000 } });
    await waitFor(async () => (shutdownTracker(own.app)?.openCount ?? 0) > 0);
    await own.close();
    expect((await pending).status).toBe(204);
  });
});
