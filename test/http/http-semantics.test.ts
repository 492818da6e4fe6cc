import { describe, expect, it } from 'vitest';
import { servedRoutes } from '../../src/http/app.js';
import type { EventsPage } from '../../src/domain/index.js';
import { call, client, createAgent, expectError, serverSession, settled } from './helpers.js';

// A heartbeat far beyond the test: a stream's head can only arrive because it is sent at once.
const { api, server } = serverSession({ sseHeartbeatMs: 3_600_000 });

/** A served path with every `:param` filled with a value that names nothing. */
const concrete = (url: string): string => url.replace(/:([A-Za-z_]+)/g, 'nobody');

const eventCount = async (agentId: string): Promise<number> =>
  (await api.get<EventsPage>(`/api/agents/${agentId}/events?limit=1&order=desc`)).body.newest_seq ?? 0;

describe('HTTP methods', () => {
  it('answers HEAD on every GET route like GET, without a body', async () => {
    const gets = servedRoutes(server().app).filter((route) => route.method === 'GET');
    expect(gets.length).toBeGreaterThan(20);
    for (const route of gets) {
      const path = concrete(route.url);
      const head = await call(server().base, 'HEAD', path, { headers: { accept: 'text/event-stream, application/json' } });
      expect(head.text, `HEAD ${path}`).toBe('');
      if (route.url.endsWith('/stream')) {
        // GET would open a stream: HEAD gives its head, or GET's refusal for an unknown agent.
        expect(head.status, `HEAD ${path}`).toBe(route.url.includes(':id') ? 404 : 200);
        continue;
      }
      const get = await call(server().base, 'GET', path);
      expect(head.status, `HEAD ${path}`).toBe(get.status);
      expect(head.headers.get('content-type'), `HEAD ${path}`).toBe(get.headers.get('content-type'));
    }
    const agent = await createAgent(api);
    const stream = await call(server().base, 'HEAD', `/api/agents/${agent.id}/events/stream?after_seq=0`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    // A cursor outside the window is refused as GET refuses it (HEAD carries no envelope body).
    expect((await call(server().base, 'HEAD', `/api/agents/${agent.id}/events/stream?after_seq=99999`)).status).toBe(404);
  });

  it('answers a known path asked with another method 405 with Allow, and an unknown path 404', async () => {
    const byPath = new Map<string, Set<string>>();
    for (const route of servedRoutes(server().app)) {
      const methods = byPath.get(route.url) ?? new Set<string>();
      methods.add(route.method);
      byPath.set(route.url, methods);
    }
    for (const [url, methods] of byPath) {
      const allowed = [...methods, ...(methods.has('GET') ? ['HEAD'] : [])].sort().join(', ');
      const wrong = ['PUT', 'PATCH', 'DELETE', 'POST', 'GET'].find((method) => !methods.has(method)) ?? 'OPTIONS';
      const reply = await call(server().base, wrong, concrete(url));
      expectError(reply, 405, 'method_not_allowed');
      expect(reply.headers.get('allow'), `${wrong} ${url}`).toBe(allowed);
      expect((reply.body as { error: { message: string } }).error.message).toContain(`allowed: ${allowed}`);
    }
    expectError(await call(server().base, 'GET', '/api/agents/a/b/c/d/e/f'), 404, 'route_not_found');
    const callback = await call(server().base, 'GET', '/callbacks/wake/secret-capability-token');
    expectError(callback, 405, 'method_not_allowed');
    expect(callback.text).not.toContain('secret-capability-token');
  });
});

describe('request bodies', () => {
  it('413 states the limit, on JSON routes and on callbacks', async () => {
    const big = await call(server().base, 'POST', '/api/control/agents', { json: { mission: 'x'.repeat(256 * 1024) } });
    expectError(big, 413, 'payload_too_large');
    expect((big.body as { error: { message: string } }).error.message).toBe('the body exceeds the limit of 262144 bytes (256 KiB)');
    const agent = await createAgent(api);
    const callback = await call(server().base, 'POST', new URL(agent.triggerUrl).pathname, { raw: 'y'.repeat(256 * 1024 + 1), headers: { 'content-type': 'text/plain' } });
    expectError(callback, 413, 'payload_too_large');
    expect((callback.body as { error: { message: string } }).error.message).toContain('262144 bytes');
  });

  it('refuses a JSON body declared in another charset (415), changing nothing; UTF-8 in any spelling passes', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const path = `/api/control/agents/${agent.id}/wake`;
    const before = await eventCount(agent.id);
    for (const charset of ['latin1', 'ISO-8859-1', 'utf-16', '"windows-1252"']) {
      const reply = await call(server().base, 'POST', path, { raw: '{"reason":"x"}', headers: { 'content-type': `application/json; charset=${charset}` } });
      expectError(reply, 415, 'unsupported_media_type');
      expect((reply.body as { error: { message: string } }).error.message).toMatch(/^application\/json bodies must be UTF-8: charset=.+ is not supported/);
    }
    expect(await eventCount(agent.id)).toBe(before);
    for (const type of ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset="utf8"', 'application/json']) {
      const reply = await call(server().base, 'POST', path, { raw: '{"reason":"still fine"}', headers: { 'content-type': type } });
      expect(reply.status, type).toBe(200);
    }
  });

  it('a text/plain body to a JSON route names what the route takes', async () => {
    const agent = await createAgent(api);
    const reply = await call(server().base, 'POST', `/api/control/agents/${agent.id}/prompt`, { raw: 'hello', headers: { 'content-type': 'text/plain' } });
    expectError(reply, 415, 'unsupported_media_type');
    expect((reply.body as { error: { message: string } }).error.message).toBe("unsupported Content-Type 'text/plain': this route takes application/json (UTF-8)");
  });
});

describe('event streams', () => {
  it('send their head at once, before any event or heartbeat', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    // The live tail of an idle agent: nothing to send, and no heartbeat for an hour.
    for (const path of [`/api/agents/${agent.id}/events/stream`, '/api/events/stream']) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 20_000);
      const response = await fetch(`${server().base}${path}`, { headers: { accept: 'text/event-stream' }, signal: controller.signal });
      clearTimeout(timer);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      expect(response.headers.get('x-request-id')).toMatch(/\S/);
      await response.body?.cancel();
    }
  });
});
