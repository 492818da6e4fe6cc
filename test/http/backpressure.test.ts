import { describe, expect, it } from 'vitest';
import type { AgentStateView, AgentSummary } from '../../src/domain/index.js';
import { client, createAgent, expectError, serverSession, settled, startServer, waitFor, type Client, type Reply } from './helpers.js';

// Small bounds, so a flood meets them; each accepted prompt runs a command and waits for it, so the
// inbox stays full while the flood lasts.
const { api } = serverSession({ runtime: { inboxMaxMessages: 4, inboxMaxBytes: 256 } });

const prompt = (client: Client, id: string, text: string): Promise<Reply<{ message_id?: string }>> =>
  client.post<{ message_id?: string }>(`/api/control/agents/${id}/prompt`, { text });

interface Event {
  event_seq: number;
  type: string;
  payload: Record<string, unknown>;
}

/** Every event of the agent, paged through. */
async function eventsOf(client: Client, id: string): Promise<Event[]> {
  const all: Event[] = [];
  for (;;) {
    const page = (await client.get<{ events: Event[] }>(`/api/agents/${id}/events?limit=512&after_seq=${all.at(-1)?.event_seq ?? 0}`)).body.events;
    if (page.length === 0) return all;
    all.push(...page);
  }
}

const operatorPrompts = async (client: Client, id: string) =>
  (await client.get<AgentStateView>(`/api/agents/${id}/state`)).body.queue.filter((m) => m.kind === 'operator_prompt');

/**
 * An http_worker agent's first prompt becomes its turn, held while no worker claims it: its
 * message is no longer pending, so what is queued after it stays queued.
 */
async function holdTurn(client: Client, id: string): Promise<void> {
  expect((await prompt(client, id, 'held')).status).toBe(200);
  await waitFor(async () => (await client.get<AgentStateView>(`/api/agents/${id}/state`)).body.queue.some((m) => m.status === 'dequeued'));
}

/** Prompts until the inbox is full: 4 pending (the bound), one more refused. */
async function fill(client: Client, id: string): Promise<void> {
  await holdTurn(client, id);
  for (let i = 0; ; i++) {
    const reply = await prompt(client, id, `fill ${i}`);
    if (reply.status !== 200) {
      expectError(reply, 429, 'inbox_full');
      const state = (await client.get<AgentStateView>(`/api/agents/${id}/state`)).body;
      expect(state.queue.filter((m) => m.status === 'queued')).toHaveLength(4);
      return;
    }
    expect(i).toBeLessThan(8);
  }
}

describe('inbox backpressure', () => {
  it('refuses a flood to one agent beyond its bound with 429 inbox_full and Retry-After, records nothing for it, processes every accepted prompt, and keeps /readyz and GET status answering', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const flood = Array.from({ length: 60 }, (_, i) => prompt(api, agent.id, `/exec-wait sleep 0.2\nflood ${i}`));
    // Asked while the flood is in flight: they answer without waiting for the inbox to drain.
    const [ready, status] = await Promise.all([api.get('/readyz'), api.get<AgentSummary>(`/api/agents/${agent.id}/status`)]);
    const replies = await Promise.all(flood);
    expect(ready.status).toBe(200);
    expect(status.status).toBe(200);
    const accepted = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const reply of refused) {
      expectError(reply, 429, 'inbox_full');
      expect(reply.headers.get('retry-after')).toBe('1');
      expect(reply.body).toMatchObject({ error: { retryable: true, details: { scope: 'agent' } } });
    }
    // Only the accepted prompts were queued, and every one of them is processed.
    const ids = accepted.map((r) => r.body.message_id).sort();
    await settled(api, agent.id);
    const events = await eventsOf(api, agent.id);
    const queued = events.filter((e) => e.type === 'message_queued' && e.payload['priority'] === 'interject').map((e) => e.payload['message_id']);
    expect(queued.sort()).toEqual(ids);
    // A turn takes several messages (issue 18): each one's run is the turn that took it, at its start or a safe point.
    const runs = new Map<unknown, unknown>(
      events
        .filter((e) => e.type === 'turn_started' || e.type === 'turn_interjected')
        .flatMap((e) => ((e.payload['message_ids'] ?? [e.payload['message_id']]) as string[]).map((id) => [id, e.payload['run_id']] as const)),
    );
    const finished = new Set(events.filter((e) => e.type === 'turn_finished').map((e) => e.payload['run_id']));
    for (const id of ids) expect(finished.has(runs.get(id))).toBe(true);
  });

  it('bounds the bytes of an agent\'s inbox: a body beyond inboxMaxBytes is refused and changes nothing', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await settled(api, agent.id);
    const before = (await api.get<AgentStateView>(`/api/agents/${agent.id}/state`)).body;
    expectError(await prompt(api, agent.id, 'x'.repeat(300)), 429, 'inbox_full');
    const after = (await api.get<AgentStateView>(`/api/agents/${agent.id}/state`)).body;
    expect(after.queue).toEqual(before.queue);
    expect(after.summary.state_version).toBe(before.summary.state_version);
    // Under the bound the same agent takes input; two of 200 bytes together exceed it.
    await holdTurn(api, agent.id);
    expect((await prompt(api, agent.id, 'y'.repeat(200))).status).toBe(200);
    expectError(await prompt(api, agent.id, 'z'.repeat(200)), 429, 'inbox_full');
    expect(await operatorPrompts(api, agent.id)).toHaveLength(2);
  });

  it('answers a stopped agent with 409 agent_stopped, not 429, whatever its inbox holds', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await fill(api, agent.id);
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expectError(await prompt(api, agent.id, 'anyone?'), 409, 'agent_stopped');
  });

  it('answers a retried request with its recorded answer even when the inbox is full', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await holdTurn(api, agent.id);
    const first = await api.post<{ message_id: string }>(`/api/control/agents/${agent.id}/prompt`, { text: 'keyed' }, { 'idempotency-key': 'bp-1' });
    await fill(api, agent.id);
    const again = await api.post<{ message_id: string }>(`/api/control/agents/${agent.id}/prompt`, { text: 'keyed' }, { 'idempotency-key': 'bp-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.message_id).toBe(first.body.message_id);
  });

  it('bounds the inputs in flight process-wide: beyond ingressMaxInFlight any agent gets 429 inbox_full (scope process)', async () => {
    const server = await startServer({ runtime: { ingressMaxInFlight: 2 } });
    try {
      const local = client(server.base);
      const agents = await Promise.all([createAgent(local, { config: { turn_runner: 'http_worker' } }), createAgent(local, { config: { turn_runner: 'http_worker' } })]);
      const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => prompt(local, agents[i % 2]?.id ?? '', `burst ${i}`)));
      const refused = replies.filter((r) => r.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      for (const reply of refused) expect(reply.body).toMatchObject({ error: { code: 'inbox_full', details: { scope: 'process' } } });
      const queued = (await operatorPrompts(local, agents[0]?.id ?? '')).length + (await operatorPrompts(local, agents[1]?.id ?? '')).length;
      expect(queued).toBe(replies.length - refused.length);
    } finally {
      await server.close();
    }
  });
});
