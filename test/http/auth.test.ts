import { describe, expect, it } from 'vitest';
import { isProtectedRoute } from '../../src/http/auth.js';
import { call, client, createAgent, expectError, serverSession, startServer } from './helpers.js';

const TOKEN = 'correct horse battery staple';
const { server } = serverSession({ token: TOKEN });

describe('bearer mode', () => {
  it('answers 401 unauthorized without a token, with a wrong one or another scheme', async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` },
      { authorization: TOKEN },
      { authorization: 'Bearer' },
    ];
    for (const headers of attempts) {
      const reply = await call(server().base, 'GET', '/api/agents/list', { headers });
      expectError(reply, 401, 'unauthorized');
      expect(reply.headers.get('www-authenticate')).toBe('Bearer');
    }
    expectError(await call(server().base, 'POST', '/api/control/agents', { json: {} }), 401, 'unauthorized');
    expectError(await call(server().base, 'GET', '/api/machines'), 401, 'unauthorized');
  });

  it('refuses before anything else: an unauthorised create makes no agent', async () => {
    const before = await client(server().base, TOKEN).get<{ items: unknown[] }>('/api/agents/list?limit=512');
    expectError(await call(server().base, 'POST', '/api/control/agents', { json: { agent_id: 'sneaky' } }), 401, 'unauthorized');
    expectError(await call(server().base, 'POST', '/api/control/agents', { json: { bogus: true } }), 401, 'unauthorized');
    const after = await client(server().base, TOKEN).get<{ items: unknown[] }>('/api/agents/list?limit=512');
    expect(after.body.items).toEqual(before.body.items);
  });

  it('accepts the right token (scheme case-insensitive)', async () => {
    expect((await call(server().base, 'GET', '/api/agents/list', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await call(server().base, 'GET', '/api/agents/list', { headers: { authorization: `bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('leaves callbacks to their capability and discovery routes open', async () => {
    const agent = await createAgent(client(server().base, TOKEN));
    expect((await call(server().base, 'POST', new URL(agent.triggerUrl).pathname, { raw: 'x' })).status).toBe(200);
    for (const path of ['/handshake', '/healthz', '/readyz', '/openapi.json']) {
      expect((await call(server().base, 'GET', path)).status).toBe(200);
    }
  });
});

describe('local mode', () => {
  it('needs no token', async () => {
    const local = await startServer();
    expect((await call(local.base, 'GET', '/api/agents/list')).status).toBe(200);
    await local.close();
  });
});

describe('isProtectedRoute', () => {
  it('covers /api and everything under it only', () => {
    expect(isProtectedRoute('/api/agents/:id/status')).toBe(true);
    expect(isProtectedRoute('/api')).toBe(true);
    expect(isProtectedRoute('/apix')).toBe(false);
    expect(isProtectedRoute('/callbacks/wake/:token')).toBe(false);
    expect(isProtectedRoute(undefined)).toBe(false);
  });
});
