import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect } from 'vitest';
import type { z } from 'zod';
import { CreateAgentResponse } from '../../src/http/schemas.js';
import { buildApp } from '../../src/http/app.js';
import type { HttpApp } from '../../src/http/types.js';
import { Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import type { AgentSummary } from '../../src/domain/index.js';

export interface TestServer {
  base: string;
  app: HttpApp;
  runtime: Runtime;
  dataDir: string;
  /** Log lines, when started with `captureLogs`. */
  logs: string[];
  /** Closes the app and the runtime; removes the data dir unless `keepDataDir`. */
  close(options?: { keepDataDir?: boolean }): Promise<void>;
}

export interface StartOptions {
  token?: string;
  dataDir?: string;
  captureLogs?: boolean;
  sseHeartbeatMs?: number;
  /** Options of the runtime behind the server (its data dir is `dataDir`). */
  runtime?: Omit<RuntimeOptions, 'dataDir'>;
}

const madeDirs = new Set<string>();
const newTempDir = (prefix: string): Promise<string> => mkdtemp(join(tmpdir(), prefix));

/** A new directory under the OS temp dir, kept until {@link removeTempDirs} (a test file's `afterAll`). */
export async function tempDir(prefix = 'holon-http-'): Promise<string> {
  const dir = await newTempDir(prefix);
  madeDirs.add(dir);
  return dir;
}

/** Removes every directory {@link tempDir} made in this test file (close what runs in them first). */
export async function removeTempDirs(): Promise<void> {
  const dirs = [...madeDirs];
  madeDirs.clear();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
}

/** A real runtime on a temp data dir behind the app on a real socket. */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  // Its own: `close` removes it, so `removeTempDirs` must not while the server runs.
  const dataDir = options.dataDir ?? (await newTempDir('holon-http-'));
  const runtime = await Runtime.open({ ...options.runtime, dataDir });
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter((line) => line.length > 0));
      done();
    },
  });
  const app = await buildApp({
    runtime,
    auth: options.token === undefined ? {} : { token: options.token },
    logger: options.captureLogs ? { level: 'trace', stream } : false,
    ...(options.sseHeartbeatMs !== undefined ? { sseHeartbeatMs: options.sseHeartbeatMs } : {}),
  });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  let closed = false;
  return {
    base,
    app,
    runtime,
    dataDir,
    logs,
    async close(closeOptions = {}) {
      if (closed) return;
      closed = true;
      await app.close();
      await runtime.close();
      if (!closeOptions.keepDataDir && options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The wire type of a response schema (tests name the schema they expect: `call<Wire<typeof X>>`). */
export type Wire<S extends z.ZodType> = z.output<S>;

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  body: T;
}

export interface CallOptions {
  /** A value sent as JSON (Content-Type: application/json). */
  json?: unknown;
  /** A raw body, sent as is. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export async function call<T = unknown>(base: string, method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  let body: string | Buffer | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  } else if (options.raw !== undefined) {
    body = options.raw;
  }
  const response = await fetch(`${base}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed as T };
}

/** A small client bound to one server (and optionally a bearer token); `base` may be resolved at each call. */
export function client(baseOf: string | (() => string), token?: string) {
  const at = (): string => (typeof baseOf === 'string' ? baseOf : baseOf());
  const auth = (headers: Record<string, string> = {}): Record<string, string> =>
    token === undefined ? headers : { authorization: `Bearer ${token}`, ...headers };
  return {
    get: <T = unknown>(path: string, headers?: Record<string, string>) => call<T>(at(), 'GET', path, { headers: auth(headers) }),
    post: <T = unknown>(path: string, json?: unknown, headers?: Record<string, string>) =>
      call<T>(at(), 'POST', path, { ...(json === undefined ? {} : { json }), headers: auth(headers) }),
    patch: <T = unknown>(path: string, json?: unknown, headers?: Record<string, string>) =>
      call<T>(at(), 'PATCH', path, { ...(json === undefined ? {} : { json }), headers: auth(headers) }),
    delete: <T = unknown>(path: string, headers?: Record<string, string>) => call<T>(at(), 'DELETE', path, { headers: auth(headers) }),
    raw: <T = unknown>(method: string, path: string, options: CallOptions = {}) =>
      call<T>(at(), method, path, { ...options, headers: auth(options.headers) }),
  };
}
export type Client = ReturnType<typeof client>;

/**
 * One server for a test file: started before its tests, closed after them. `api` is usable at
 * once (it resolves the server's address per call); `server()` is the running server.
 */
export function serverSession(options: StartOptions = {}): { api: Client; server: () => TestServer } {
  let running: TestServer | undefined;
  const server = (): TestServer => {
    if (!running) throw new Error('the server starts in beforeAll: use it inside a test or hook');
    return running;
  };
  beforeAll(async () => {
    running = await startServer(options);
  });
  afterAll(async () => running?.close());
  return { api: client(() => server().base, options.token), server };
}

export interface CreatedAgent {
  id: string;
  agent: AgentSummary;
  triggerUrl: string;
  token: string;
}

let agentCounter = 0;

export async function createAgent(api: Client, body: Record<string, unknown> = {}): Promise<CreatedAgent> {
  agentCounter += 1;
  const reply = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', { agent_id: `agent-${process.pid}-${agentCounter}`, ...body });
  expect(reply.status, reply.text).toBe(201);
  const triggerUrl = reply.body.external_trigger.trigger_url ?? '';
  const { ok: _ok, external_trigger: _capability, ...agent } = reply.body;
  return {
    id: agent.identity.agent_id,
    agent,
    triggerUrl,
    token: triggerUrl.split('/').pop() ?? '',
  };
}

/**
 * Waits until a fresh agent has gone to sleep on its own (it does once idle after creation), so a
 * test's next request does not race the scheduler's own sleep transition.
 */
export async function settled(api: Client, agentId: string): Promise<AgentSummary> {
  return waitFor(async () => {
    const reply = await api.get<AgentSummary>(`/api/agents/${agentId}/status`);
    return reply.body.phase === 'sleeping' ? reply.body : undefined;
  });
}

/** Asserts the error envelope with `code` and status. */
export function expectError(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.body).toMatchObject({ ok: false, error: { code, message: expect.any(String), retryable: expect.any(Boolean) } });
}

/**
 * Files whose bytes change while the server merely runs: the lease record renewed by the
 * heartbeat (`lease.json`), the short-lived lock taken around each renewal (`lease.lock`) and
 * their atomic-write temp files (`<name>.<pid>.<n>.tmp`). Everything else must stay byte-identical.
 */
export const VOLATILE_FILE = /^lease\.(?:json|lock)(?:\.\d+\.\d+\.tmp)?$/;

/** SHA-256 of every file under `dir` (relative path → hash), volatile lease files excluded. */
export async function hashTree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (!(current === dir && VOLATILE_FILE.test(entry.name))) {
        out.set(relative(dir, path), createHash('sha256').update(await readFile(path)).digest('hex'));
      }
    }
  };
  await walk(dir);
  return out;
}

export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error('waitFor: condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface SseMessage {
  id: string | null;
  event: string | null;
  data: string;
  comment: boolean;
}

/** Reads an SSE response incrementally: `next()` gives the next event (heartbeat comments skipped). */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';
  #done = false;
  readonly comments: string[] = [];

  constructor(readonly response: Response) {
    if (!response.body) throw new Error('no body');
    this.#reader = response.body.getReader();
  }

  get done(): boolean {
    return this.#done;
  }

  /** The next event, or null when the stream ended; rejects after `timeoutMs`. */
  async next(timeoutMs = 10_000): Promise<SseMessage | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const boundary = this.#buffer.indexOf('\n\n');
      if (boundary >= 0) {
        const block = this.#buffer.slice(0, boundary);
        this.#buffer = this.#buffer.slice(boundary + 2);
        const message = parseBlock(block);
        if (message.comment) {
          this.comments.push(message.data);
          continue;
        }
        return message;
      }
      if (this.#done) return null;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error('SseReader: timed out');
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        this.#reader.read(),
        new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), remaining);
        }),
      ]);
      clearTimeout(timer);
      if (chunk === 'timeout') throw new Error('SseReader: timed out');
      if (chunk.done) this.#done = true;
      else this.#buffer += this.#decoder.decode(chunk.value, { stream: true });
    }
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => undefined);
  }
}

function parseBlock(block: string): SseMessage {
  let id: string | null = null;
  let event: string | null = null;
  const data: string[] = [];
  let comment = true;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      data.push(line.slice(1).trim());
      continue;
    }
    comment = false;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { id, event, data: data.join('\n'), comment };
}

/** Opens an SSE stream (the promise resolves once the response head arrived). */
export async function openStream(base: string, path: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const response = await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', ...headers } });
  if (response.status !== 200) throw new Error(`stream ${path}: ${response.status} ${await response.text()}`);
  return new SseReader(response);
}
