import { describe, expect, it } from 'vitest';
import { Readiness } from '../../src/domain/index.js';
import { buildApp } from '../../src/http/app.js';
import { HandshakeResponse, HealthResponse } from '../../src/http/schemas.js';
import type { RuntimeApi } from '../../src/runtime/api.js';
import { call, expectError, serverSession, type Wire } from './helpers.js';

const { server } = serverSession();

/** The real runtime with `readiness` replaced. */
function withReadiness(runtime: RuntimeApi, override: (real: Readiness) => Readiness): RuntimeApi {
  return Object.create(runtime, {
    readiness: { value: async () => override(await runtime.readiness()) },
  }) as RuntimeApi;
}

describe('discovery and health', () => {
  it('GET /handshake names the protocol, the auth mode and the runtime', async () => {
    const reply = await call<Wire<typeof HandshakeResponse>>(server().base, 'GET', '/handshake');
    expect(reply.status).toBe(200);
    const handshake = HandshakeResponse.parse(reply.body);
    expect(handshake).toMatchObject({
      protocol: { name: 'holon-xstate', version: 1 },
      auth: { mode: 'local', required: false },
      runtime: { node_id: `node-${process.pid}`, store: 'lowdb' },
    });
    expect(handshake.capabilities).toEqual(expect.arrayContaining(['events_sse', 'turn_workers', 'external_triggers']));
  });

  it('GET /healthz answers 200 while serving', async () => {
    const reply = await call(server().base, 'GET', '/healthz');
    expect(reply.status).toBe(200);
    expect(HealthResponse.parse(reply.body).ok).toBe(true);
  });

  it('GET /readyz reports the lease, the store and progress', async () => {
    const reply = await call(server().base, 'GET', '/readyz');
    expect(reply.status).toBe(200);
    expect(Readiness.parse(reply.body)).toMatchObject({ ok: true, lease: { held: true }, dependencies: { store: { ok: true, kind: 'lowdb' } } });
  });

  it('GET /readyz answers 503 with the envelope when the store is down or the lease is lost', async () => {
    const cases = [
      [(r: Readiness): Readiness => ({ ...r, ok: false, dependencies: { store: { ok: false, kind: 'lowdb' } } }), 'store_unavailable'],
      [(r: Readiness): Readiness => ({ ...r, ok: false, lease: { ...r.lease, held: false } }), 'lease_lost'],
    ] as const;
    for (const [override, code] of cases) {
      const app = await buildApp({ runtime: withReadiness(server().runtime, override), auth: {} });
      const reply = await app.inject({ method: 'GET', url: '/readyz' });
      await app.close();
      const body = reply.json();
      expect(reply.statusCode).toBe(503);
      expect(body).toMatchObject({ ok: false, error: { code, retryable: true, details: { readiness: { ok: false } } } });
    }
  });

  it('GET /openapi.json answers without a token even in bearer mode; /api does not', async () => {
    const app = await buildApp({ runtime: server().runtime, auth: { token: 's3cret' } });
    for (const url of ['/handshake', '/healthz', '/readyz', '/openapi.json']) {
      expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
    }
    const handshake = (await app.inject({ method: 'GET', url: '/handshake' })).json();
    expect(handshake).toMatchObject({ auth: { mode: 'bearer', required: true } });
    expect((await app.inject({ method: 'GET', url: '/api/machines' })).statusCode).toBe(401);
    await app.close();
  });

  it('answers unknown routes with the 404 envelope', async () => {
    expectError(await call(server().base, 'GET', '/nowhere'), 404, 'route_not_found');
  });
});
