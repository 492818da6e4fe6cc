import { describe, expect, it } from 'vitest';
import { AgentEvent, EventsPage } from '../../src/domain/index.js';
import { call, client, createAgent, expectError, openStream, serverSession, settled, type SseReader, startServer, waitFor } from './helpers.js';

const { api, server } = serverSession({ sseHeartbeatMs: 50 });

const page = async (id: string, query = ''): Promise<EventsPage> => {
  const reply = await api.get(`/api/agents/${id}/events${query}`);
  expect(reply.status, reply.text).toBe(200);
  return EventsPage.parse(reply.body);
};

/** Every event the store holds for the agent, in order. */
async function allEvents(id: string): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  let after = 0;
  for (;;) {
    const next = await page(id, `?after_seq=${after}&limit=512`);
    out.push(...next.events);
    if (!next.has_newer || next.events.length === 0) return out;
    after = next.cursor_seq;
  }
}

/** Reads events until one with `event_seq >= seq` arrived. */
async function readUntil(reader: SseReader, seq: number, into: AgentEvent[]): Promise<void> {
  while ((into.at(-1)?.event_seq ?? 0) < seq) {
    const message = await reader.next();
    if (message === null) throw new Error('stream ended early');
    const event = AgentEvent.parse(JSON.parse(message.data));
    expect(message.id).toBe(String(event.event_seq));
    expect(message.event).toBe(event.type);
    into.push(event);
  }
}

/** Mutations that append events to the agent's log (with no turn runner in the way). */
async function poke(id: string, times: number): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    const reply = await api.post(`/api/control/agents/${id}/work-items`, { objective: `poke ${i}` });
    expect(reply.status, reply.text).toBe(201);
  }
}

describe('GET /api/agents/:id/events', () => {
  it('pages the durable log by after_seq / before_seq, limit and order', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await poke(agent.id, 3);
    const all = await allEvents(agent.id);
    expect(all.map((e) => e.event_seq)).toEqual(all.map((_, i) => i + 1));
    const first = await page(agent.id, '?limit=2');
    expect(first.events.map((e) => e.event_seq)).toEqual([1, 2]);
    expect(first).toMatchObject({ has_newer: true, cursor_seq: 2, oldest_seq: 1, newest_seq: all.length });
    const window = await page(agent.id, '?after_seq=1&before_seq=4');
    expect(window.events.map((e) => e.event_seq)).toEqual([2, 3]);
    const newestFirst = await page(agent.id, '?order=desc&limit=1');
    expect(newestFirst.events.map((e) => e.event_seq)).toEqual([all.length]);
  });

  it('answers 400 for bad queries and 404 for an unknown agent', async () => {
    const agent = await createAgent(api);
    expectError(await api.get(`/api/agents/${agent.id}/events?limit=0`), 400, 'invalid_request');
    expectError(await api.get(`/api/agents/${agent.id}/events?order=sideways`), 400, 'invalid_request');
    expectError(await api.get(`/api/agents/${agent.id}/events?after_seq=-1`), 400, 'invalid_request');
    expectError(await api.get('/api/agents/nobody/events'), 404, 'agent_not_found');
  });
});

describe('GET /api/agents/:id/events/stream', () => {
  it('resumes after a disconnect with Last-Event-ID: every event exactly once, in order', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const received: AgentEvent[] = [];

    const first = await openStream(server().base, `/api/agents/${agent.id}/events/stream?after_seq=0`);
    await readUntil(first, 2, received);
    await poke(agent.id, 2);
    await readUntil(first, received.at(-1)!.event_seq + 1, received);
    await first.close(); // the client goes away mid-stream

    await poke(agent.id, 3); // committed while nobody listens
    const lastId = String(received.at(-1)!.event_seq);
    const second = await openStream(server().base, `/api/agents/${agent.id}/events/stream`, { 'last-event-id': lastId });
    const missed = (await page(agent.id, '?order=desc&limit=1')).newest_seq;
    await readUntil(second, missed, received);
    await poke(agent.id, 2); // and live again
    const newest = await waitFor(async () => {
      const all = await allEvents(agent.id);
      return all.length > missed ? all : undefined;
    });
    await readUntil(second, newest.at(-1)!.event_seq, received);
    await second.close();

    const stored = await allEvents(agent.id);
    const upTo = received.at(-1)!.event_seq;
    expect(received.map((e) => e.event_seq)).toEqual(stored.filter((e) => e.event_seq <= upTo).map((e) => e.event_seq));
    expect(received).toEqual(stored.filter((e) => e.event_seq <= upTo));
  });

  it('starts after after_seq, and tails live without a cursor', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await poke(agent.id, 1);
    const newest = (await page(agent.id, '?order=desc&limit=1')).newest_seq;
    const fromCursor = await openStream(server().base, `/api/agents/${agent.id}/events/stream?after_seq=${newest - 1}`);
    const got: AgentEvent[] = [];
    await readUntil(fromCursor, newest, got);
    expect(got.map((e) => e.event_seq)).toEqual([newest]);
    await fromCursor.close();

    const tail = await openStream(server().base, `/api/agents/${agent.id}/events/stream`);
    await poke(agent.id, 1);
    const live: AgentEvent[] = [];
    await readUntil(tail, newest + 1, live);
    expect(live[0]!.event_seq).toBe(newest + 1);
    await tail.close();
  });

  it('sends heartbeat comments while idle', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const reader = await openStream(server().base, `/api/agents/${agent.id}/events/stream`);
    await waitFor(async () => {
      await reader.next(60).catch(() => null); // events of the agent settling may still arrive
      return reader.comments.includes('heartbeat');
    });
    expect(reader.comments.every((comment) => comment === 'heartbeat')).toBe(true);
    await reader.close();
  });

  it('answers 404 cursor_not_found outside the retained window, before opening the stream', async () => {
    const agent = await createAgent(api);
    // Asleep, so no event lands between reading newest_seq and the requests (newest + 1 would then exist).
    await settled(api, agent.id);
    const newest = (await page(agent.id, '?order=desc&limit=1')).newest_seq;
    const ahead = await call(server().base, 'GET', `/api/agents/${agent.id}/events/stream?after_seq=${newest + 100}`, {
      headers: { accept: 'text/event-stream' },
    });
    expectError(ahead, 404, 'cursor_not_found');
    expect(ahead.headers.get('content-type')).toContain('application/json');
    expect(ahead.body).toMatchObject({ error: { details: { newest_seq: newest } } });
    expectError(
      await call(server().base, 'GET', `/api/agents/${agent.id}/events/stream`, { headers: { 'last-event-id': String(newest + 1) } }),
      404,
      'cursor_not_found',
    );
  });

  it('answers 400 for a malformed cursor, 404 for an unknown agent, 406 for a client refusing SSE', async () => {
    const agent = await createAgent(api);
    expectError(await call(server().base, 'GET', `/api/agents/${agent.id}/events/stream`, { headers: { 'last-event-id': 'abc' } }), 400, 'invalid_request');
    expectError(await call(server().base, 'GET', `/api/agents/${agent.id}/events/stream?after_seq=x`), 400, 'invalid_request');
    expectError(await call(server().base, 'GET', '/api/agents/nobody/events/stream'), 404, 'agent_not_found');
    expectError(
      await call(server().base, 'GET', `/api/agents/${agent.id}/events/stream`, { headers: { accept: 'application/json' } }),
      406,
      'not_acceptable',
    );
  });
});

describe('GET /api/events/stream', () => {
  it('streams live events of every agent', async () => {
    const one = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const two = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    const reader = await openStream(server().base, '/api/events/stream');
    await poke(one.id, 1);
    await poke(two.id, 1);
    const seen = new Set<string>();
    while (!(seen.has(one.id) && seen.has(two.id))) {
      const message = await reader.next();
      if (message === null) throw new Error('stream ended');
      const event = AgentEvent.parse(JSON.parse(message.data));
      if (event.type === 'work_item_created') seen.add(event.agent_id);
    }
    await reader.close();
    expectError(await call(server().base, 'GET', '/api/events/stream', { headers: { accept: 'text/html' } }), 406, 'not_acceptable');
  });
});

describe('shutdown', () => {
  it('ends open streams when the app closes', async () => {
    const own = await startServer();
    const agent = await createAgent(client(own.base));
    const reader = await openStream(own.base, `/api/agents/${agent.id}/events/stream?after_seq=0`);
    const global = await openStream(own.base, '/api/events/stream');
    await own.close();
    for (const stream of [reader, global]) {
      while ((await stream.next()) !== null) {
        // drain what was sent before the close
      }
      expect(stream.done).toBe(true);
    }
  });
});
