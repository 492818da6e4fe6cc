import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildApp } from '../../src/http/app.js';
import { Runtime } from '../../src/runtime/runtime.js';

/**
 * A real runtime on a temp data dir behind the app on a real socket, for the browser tests (which
 * are type-checked with the DOM library, so they do not share `test/http/helpers.ts`).
 */
export interface BrowserTestServer {
  base: string;
  runtime: Runtime;
  /** Log lines (when started with a token: every request is logged). */
  logs: string[];
  /** JSON to the API (with the bearer token when the server has one). */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T; text: string }>;
  close(): Promise<void>;
}

export async function startServer(options: { token?: string } = {}): Promise<BrowserTestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'holon-browser-'));
  const runtime = await Runtime.open({ dataDir });
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter((line) => line.length > 0));
      done();
    },
  });
  const app = await buildApp({ runtime, auth: options.token === undefined ? {} : { token: options.token }, logger: { level: 'trace', stream } });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  let closed = false;
  return {
    base,
    runtime,
    logs,
    async call<T>(method: string, path: string, body?: unknown) {
      const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
      if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
      const response = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T, text };
    },
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await runtime.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
