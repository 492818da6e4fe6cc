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
    const beat = await api.post<Wire<typeof TurnHeartbeatResponse>>(`/api/control/turns/${encodeURIComponent(offer.run_id)}/heartbeat`);
    expect(beat.status, beat.text).toBe(200);
    expect(TurnHeartbeatResponse.parse(beat.body).run_id).toBe(offer.run_id);
    expectError(await api.post('/api/control/turns/run_unknown/heartbeat'), 409, 'lease_lost');
  });

  it('applies a completion once; a second completion answers 409', async () => {
    const agentId = await workerAgentWithTurn();
    const offer = await claimFor(agentId);
    const path = `/api/control/turns/${encodeURIComponent(offer.run_id)}/complete`;
    const done = await api.post<Wire<typeof TurnCompleteResponse>>(path, { actions: [{ type: 'sleep' }], text: 'all done' });
    expect(done.status, done.text).toBe(200);
    expect(TurnCompleteResponse.parse(done.body)).toMatchObject({ run_id: offer.run_id, applied: true });
    const again = await api.post(path, { actions: [] });
    expect(again.status).toBe(409);
  });

  it('answers 400 for invalid claims and completions', async () => {
    expectError(await api.post('/api/control/turns/claim', { wait_ms: 600_000 }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/claim', { agent: 'x' }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/run_x/complete', { actions: [{ type: 'teleport' }] }), 400, 'invalid_request');
    expectError(await api.post('/api/control/turns/run_x/complete', {}), 400, 'invalid_request');
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
