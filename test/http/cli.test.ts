import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentEvent, AgentStateView, AgentSummary, EventsPage, TaskRecord } from '../../src/domain/index.js';
import { call, client, createAgent, openStream, settled, tempDir, waitFor } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Serving {
  child: ChildProcess;
  base: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

const children = new Set<ChildProcess>();

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
});

/** Spawns `holon-xstate serve` and resolves once it printed its address. */
async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Serving> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--log-level', 'warn', ...args], {
    cwd: ROOT,
    env: { ...process.env, HOLON_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const base = await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`serve exited early:\n${text}`);
    return /listening on (http:\/\/[^\s]+)/.exec(text)?.[1];
  }, 90_000);
  return { child, base, output: () => text, exited };
}

describe('holon-xstate serve', () => {
  it('binds 127.0.0.1 in local mode, shuts down on SIGTERM within 5 s with exit 0, and restarts with everything there', async () => {
    const dataDir = await tempDir('holon-cli-');
    try {
      // Local mode ignores --host and says so.
      const first = await serve(['--data-dir', dataDir, '--host', '0.0.0.0']);
      expect(new URL(first.base).hostname).toBe('127.0.0.1');
      expect(first.output()).toContain('ignoring --host 0.0.0.0');
      expect(first.output()).toMatch(/auth: local/);
      expect(first.output()).toContain(`data dir: ${dataDir}`);

      const api = client(first.base);
      const worker = await createAgent(api, { agent_id: 'cli-worker', config: { turn_runner: 'http_worker' } });
      const prompt = await api.post<{ message_id: string }>(`/api/control/agents/${worker.id}/prompt`, { text: 'keep me' });
      expect(prompt.status).toBe(200);
      const runner = await createAgent(api, { agent_id: 'cli-runner' });
      await settled(api, runner.id);
      const task = await api.post<TaskRecord>(`/api/control/agents/${runner.id}/tasks`, { summary: 'long', cmd: 'sleep 30' });
      expect(task.status, task.text).toBe(201);
      await waitFor(async () => (await api.get<TaskRecord>(`/api/agents/${runner.id}/tasks/${task.body.id}`)).body.status === 'running');
      const stream = await openStream(first.base, `/api/agents/${worker.id}/events/stream?after_seq=0`);
      expect(await stream.next()).not.toBeNull();

      const queueBefore = (await api.get<AgentStateView>(`/api/agents/${worker.id}/state`)).body.queue.map((m) => m.id);
      expect(queueBefore).toContain(prompt.body.message_id);
      const eventsBefore = (await api.get<EventsPage>(`/api/agents/${worker.id}/events?limit=512`)).body.events;

      const signalledAt = Date.now();
      first.child.kill('SIGTERM');
      const exit = await first.exited;
      expect(exit.code).toBe(0);
      expect(exit.at - signalledAt).toBeLessThan(5_000);
      expect(first.output()).toContain('SIGTERM received');
      while ((await stream.next()) !== null) {
        // the stream was ended by the server, not cut
      }

      // Restart on the same data dir, in bearer mode this time (token from the environment).
      const second = await serve(['--data-dir', dataDir, '--heap-growth', '100'], { HOLON_TOKEN: 'restart-token' });
      expect(second.output()).toMatch(/auth: bearer/);
      expect(second.output()).toContain('heap growth: 100% over the live heap');
      expect((await call(second.base, 'GET', '/api/agents/list')).status).toBe(401);
      const again = client(second.base, 'restart-token');
      const summary = await again.get<AgentSummary>(`/api/agents/${worker.id}/status`);
      expect(summary.status).toBe(200);
      const queueAfter = (await again.get<AgentStateView>(`/api/agents/${worker.id}/state`)).body.queue.map((m) => m.id);
      expect(queueAfter).toEqual(expect.arrayContaining(queueBefore));
      const eventsAfter: AgentEvent[] = (await again.get<EventsPage>(`/api/agents/${worker.id}/events?limit=512`)).body.events;
      expect(eventsAfter.slice(0, eventsBefore.length)).toEqual(eventsBefore);
      const taskAfter = await again.get<TaskRecord>(`/api/agents/${runner.id}/tasks/${task.body.id}`);
      expect(taskAfter.status).toBe(200);
      expect(taskAfter.body.status).not.toBe('running');

      second.child.kill('SIGINT');
      expect((await second.exited).code).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it('refuses unknown commands and options with exit code 2', async () => {
    for (const args of [['frobnicate'], ['serve', '--colour', 'red'], ['serve', '--port', 'http'], ['serve', '--heap-growth', '0'], ['serve', '--heap-growth', '1.5'], ['serve', '--inbox-max-messages', '0'], ['serve', '--ingress-max-in-flight', 'many']]) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let err = '';
      child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code).toBe(2);
      expect(err).toContain('usage: holon-xstate serve');
    }
  }, 120_000);
});
