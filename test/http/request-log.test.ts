import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { prettyLine } from '../../src/http/pretty-log.js';
import { call, client, createAgent, serverSession } from './helpers.js';

const TOKEN = 'log-test-token-3f9a';
const { server } = serverSession({ captureLogs: true, token: TOKEN });

interface LogLine {
  level: number;
  msg: string;
  req_id?: string;
  method?: string;
  route?: string | null;
  url?: string;
  status?: number;
  duration_ms?: number;
}

const parsed = (lines: readonly string[]): LogLine[] => lines.map((line) => JSON.parse(line) as LogLine);

describe('request logs', () => {
  it('writes one info line per request, with method, route, url, status, duration and request id', async () => {
    const api = client(server().base, TOKEN);
    const agent = await createAgent(api);
    const before = server().logs.length;
    const replies = [
      await api.get(`/api/agents/${agent.id}/status`),
      await api.post(`/api/control/agents/${agent.id}/wake`, { reason: 'log test' }),
      await api.get('/api/nothing/here'),
      await call(server().base, 'GET', '/api/agents/list'),
      await call(server().base, 'POST', new URL(agent.triggerUrl).pathname, { raw: 'ping', headers: { 'content-type': 'text/plain' } }),
    ];
    const ids = replies.map((reply) => reply.headers.get('x-request-id'));
    expect(new Set(ids).size).toBe(replies.length);
    const lines = parsed(server().logs.slice(before));
    expect(lines.some((line) => line.msg === 'incoming request')).toBe(false);
    for (const [i, reply] of replies.entries()) {
      const own = lines.filter((line) => line.req_id === ids[i]);
      expect(own, `request ${i}`).toHaveLength(1);
      expect(own[0]).toMatchObject({ level: 30, msg: 'request completed', status: reply.status, duration_ms: expect.any(Number) });
    }
    const [status, wake, missing, unauthorized, callback] = ids.map((id) => lines.find((line) => line.req_id === id));
    expect(status).toMatchObject({ method: 'GET', route: '/api/agents/:id/status', url: `/api/agents/${agent.id}/status`, status: 200 });
    expect(wake).toMatchObject({ method: 'POST', route: '/api/control/agents/:id/wake', status: 200 });
    expect(missing).toMatchObject({ method: 'GET', route: null, status: 404 });
    expect(unauthorized).toMatchObject({ status: 401 });
    expect(callback).toMatchObject({ route: '/callbacks/wake/:token', url: '/callbacks/wake/[redacted]', status: 200 });
    // Secrets stay out: the capability token and the bearer token appear in no line.
    const text = server().logs.join('\n');
    expect(text).not.toContain(agent.token);
    expect(text).not.toContain(TOKEN);
  });

  it('adopts a valid incoming X-Request-Id, echoes it, and replaces an invalid one', async () => {
    const api = client(server().base, TOKEN);
    const adopted = await api.get('/api/agents/list', { 'x-request-id': 'proxy-7f3a:01' });
    expect(adopted.headers.get('x-request-id')).toBe('proxy-7f3a:01');
    expect(parsed(server().logs).filter((line) => line.req_id === 'proxy-7f3a:01')).toHaveLength(1);
    for (const bad of ['has spaces in it', 'x'.repeat(129), '"quoted"', '-leading-dash']) {
      const replaced = await api.get('/api/agents/list', { 'x-request-id': bad });
      const id = replaced.headers.get('x-request-id');
      expect(id, bad).not.toBe(bad);
      expect(id).toMatch(/^[A-Za-z0-9_-]{8}-[0-9a-z]+$/);
    }
    // Errors carry their id too.
    const refused = await api.get('/api/agents/nobody/status', { 'x-request-id': 'trace-404' });
    expect(refused.status).toBe(404);
    expect(refused.headers.get('x-request-id')).toBe('trace-404');
  });

  it('generates ids that do not repeat across restarts (a fresh app, the same runtime)', async () => {
    const idsOf = async (): Promise<string[]> => {
      const app = await buildApp({ runtime: server().runtime, auth: {} });
      const ids: string[] = [];
      for (let i = 0; i < 5; i += 1) ids.push(String((await app.inject({ method: 'GET', url: '/healthz' })).headers['x-request-id']));
      await app.close();
      return ids;
    };
    const first = await idsOf();
    const second = await idsOf();
    expect(new Set([...first, ...second]).size).toBe(10);
    const prefix = (id: string): string => id.slice(0, id.lastIndexOf('-'));
    expect(prefix(first[0] ?? '')).not.toBe(prefix(second[0] ?? ''));
  });

  it('writes plain lines, and only plain lines, in the pretty format', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter((line) => line.length > 0));
        done();
      },
    });
    const app = await buildApp({ runtime: server().runtime, auth: {}, logger: { level: 'info', format: 'pretty', stream } });
    const reply = await app.inject({ method: 'GET', url: '/api/agents/nobody/status', headers: { 'x-request-id': 'pretty-1' } });
    expect(reply.statusCode).toBe(404);
    app.log.warn({ agent_id: 'a1', detail: 'two words' }, 'something to see');
    await app.close();
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(() => JSON.parse(line), line).toThrow();
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3} INFO +GET \/api\/agents\/nobody\/status 404 [\d.]+ ms req=pretty-1$/));
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3} WARN +something to see agent_id=a1 detail="two words"$/));
  });

  it('formats an error with its stack in the pretty format', () => {
    const line = prettyLine({ level: 50, time: 0, msg: 'request failed', err: { message: 'boom', stack: 'Error: boom\n    at x' } });
    expect(line).toBe('00:00:00.000 ERROR request failed err=\n    Error: boom\n        at x');
  });
});
