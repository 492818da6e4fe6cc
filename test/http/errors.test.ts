import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import { buildApp } from '../../src/http/app.js';
import type { RuntimeApi } from '../../src/runtime/api.js';
import { call, client, createAgent, expectError, serverSession } from './helpers.js';

const { server } = serverSession();

/** The real runtime with some methods replaced. */
function patched(runtime: RuntimeApi, methods: Partial<Record<keyof RuntimeApi, unknown>>): RuntimeApi {
  const descriptors: PropertyDescriptorMap = {};
  for (const [name, value] of Object.entries(methods)) descriptors[name] = { value };
  return Object.create(runtime, descriptors) as RuntimeApi;
}

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('utf8')));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('the error envelope', () => {
  it('answers invalid JSON with 400 invalid_json', async () => {
    const agent = await createAgent(client(server().base));
    const path = `/api/control/agents/${agent.id}/wake`;
    const headers = { 'content-type': 'application/json' };
    expectError(await call(server().base, 'POST', path, { raw: '{"reason":', headers }), 400, 'invalid_json');
    expectError(await call(server().base, 'POST', path, { raw: '', headers }), 400, 'invalid_json');
    expectError(await call(server().base, 'POST', path, { raw: '{"__proto__":{"x":1},"reason":"r"}', headers }), 400, 'invalid_json');
  });

  it('answers bodies over 256 KiB with 413 payload_too_large', async () => {
    const reply = await call(server().base, 'POST', '/api/control/agents', { json: { mission: 'x'.repeat(256 * 1024) } });
    expectError(reply, 413, 'payload_too_large');
  });

  it('answers unsupported content types with 415 naming what the route takes, and a missing one with 400', async () => {
    const agent = await createAgent(client(server().base));
    const path = `/api/control/agents/${agent.id}/wake`;
    const xml = await call(server().base, 'POST', path, { raw: '<reason/>', headers: { 'content-type': 'application/xml' } });
    expectError(xml, 415, 'unsupported_media_type');
    expect((xml.body as { error: { message: string } }).error.message).toContain('application/json');
    const text = await call(server().base, 'POST', path, { raw: 'reason=x', headers: { 'content-type': 'text/plain' } });
    expectError(text, 415, 'unsupported_media_type');
    expect((text.body as { error: { message: string } }).error.message).toBe("unsupported Content-Type 'text/plain': this route takes application/json (UTF-8)");
    expectError(await call(server().base, 'POST', path, { raw: '{"reason":"x"}', headers: { 'content-type': '' } }), 400, 'invalid_request');
  });

  it('names every failing path in details', async () => {
    const reply = await call(server().base, 'POST', '/api/control/agents', { json: { agent_id: 5, mission: [], extra: 1 } });
    expectError(reply, 400, 'invalid_request');
    const issues = (reply.body as { error: { details: { issues: Array<{ path: string }> } } }).error.details.issues;
    expect(issues.map((issue) => issue.path).sort()).toEqual(['body', 'body/agent_id', 'body/mission']);
  });

  it('answers unknown routes with the 404 envelope and a wrong method with 405, never echoing a callback token', async () => {
    expectError(await call(server().base, 'GET', '/api/nothing'), 404, 'route_not_found');
    const wrongMethod = await call(server().base, 'PUT', '/api/agents/list');
    expectError(wrongMethod, 405, 'method_not_allowed');
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');
    // A callback path is known (POST): a GET is a wrong method there.
    const callback = await call(server().base, 'GET', '/callbacks/wake/supersecrettoken');
    expectError(callback, 405, 'method_not_allowed');
    expect(callback.text).not.toContain('supersecrettoken');
  });

  it('answers a malformed request line or URL with the envelope too', async () => {
    const port = Number(new URL(server().base).port);
    const badLine = await rawRequest(port, 'NOT A REQUEST\r\n\r\n');
    expect(badLine).toMatch(/^HTTP\/1\.1 400/);
    expect(badLine).toContain('"code":"invalid_request"');
    const badUrl = await rawRequest(port, 'GET /api/agents/%E0%A4%A/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(badUrl).toMatch(/^HTTP\/1\.1 400/);
    expect(badUrl).toContain('"ok":false');
  });

  it('maps domain errors to their status and retryable flag', async () => {
    const app = await buildApp({
      runtime: patched(server().runtime, {
        getSummary: async () => {
          throw new DomainError('store_unavailable', 'disk on fire');
        },
      }),
      auth: {},
    });
    const reply = await app.inject({ method: 'GET', url: '/api/agents/someone/status' });
    await app.close();
    expect(reply.statusCode).toBe(503);
    expect(reply.json()).toEqual({ ok: false, error: { code: 'store_unavailable', message: 'disk on fire', retryable: true } });
  });

  it('answers unknown failures and responses that break their schema with 500 internal_error, leaking nothing', async () => {
    const app = await buildApp({
      runtime: patched(server().runtime, {
        getSummary: async () => {
          throw new Error('secret detail at /srv/holon/private.key');
        },
        getState: async () => ({ summary: 'not a summary' }),
      }),
      auth: {},
    });
    for (const url of ['/api/agents/someone/status', '/api/agents/someone/state']) {
      const reply = await app.inject({ method: 'GET', url });
      expect(reply.statusCode).toBe(500);
      expect(reply.json()).toEqual({ ok: false, error: { code: 'internal_error', message: 'internal error', retryable: false } });
      expect(reply.body).not.toContain('secret');
      expect(reply.body).not.toContain('summary');
    }
    await app.close();
  });
});
