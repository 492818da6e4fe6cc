import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, waitFor, type TestServer } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The commands of the README's walk-through, in order, backslash-continued lines joined. */
async function walkthrough(): Promise<string[]> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A walk through the API'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith('#'));
}

/**
 * The walk-through as one POSIX shell session, exactly as pasted (variables carry from one
 * command to the next), with two changes only: the README's `localhost:8080` is the test
 * server, and each command's output (stdout and stderr) goes to its own file. At the end the
 * session writes the last TRIGGER_URL, so the test can use it.
 */
function session(commands: readonly string[], host: string, out: string): string {
  const lines = commands.map((command, i) => `{ ${command.replaceAll('localhost:8080', host)}\n} > "${out}/${i}.out" 2>&1`);
  return [...lines, `printf '%s' "$TRIGGER_URL" > "${out}/trigger_url"`].join('\n');
}

describe('the README walk-through, run against a real server', () => {
  let server: TestServer;
  let out: string;
  beforeAll(async () => {
    server = await startServer();
    out = await mkdtemp(join(tmpdir(), 'holon-readme-'));
  });
  afterAll(async () => {
    await server?.close();
    await rm(out, { recursive: true, force: true });
  });

  it('every command does what the README says, and prints it', async () => {
    const commands = await walkthrough();
    expect(commands).toHaveLength(10);
    const host = new URL(server.base).host;
    // Its own process group: the stream left running in the background (step 2) ends with it.
    const shell = spawn('sh', ['-c', session(commands, host, out)], { detached: true, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => shell.once('exit', resolve));
    const output = async (i: number): Promise<string> => readFile(join(out, `${i}.out`), 'utf8');
    const json = async <T>(i: number): Promise<T> => JSON.parse(await output(i)) as T;
    try {
      expect(await exited).toBe(0);

      // 1. create: the answer is shown (tee) and its capability URL kept in TRIGGER_URL.
      const created = await json<{ ok: boolean; phase: string; agent: { status: string }; identity: { agent_id: string }; external_trigger: { trigger_url: string } }>(0);
      expect(created).toMatchObject({ ok: true, phase: 'active', identity: { agent_id: 'demo' } });
      expect(created.agent.status).toMatch(/^(awake_idle|awake_running|asleep)$/);
      expect(created.external_trigger.trigger_url).toMatch(/\/callbacks\/wake\/[A-Za-z0-9_-]{43}$/);

      // 2. the stream, from the start: the creation's events first, then the prompt's turn and task.
      const stream = await waitFor(async () => {
        const text = await output(1);
        return /^event: task_status_changed$/m.test(text) ? text : undefined;
      }, 15_000);
      expect(stream).toMatch(/^id: 1\nevent: agent_created\ndata: \{.*"type":"agent_created"/m);
      expect(stream).toMatch(/^event: transition_committed$/m);
      expect(stream).toMatch(/^event: trigger_created$/m);
      expect(stream).toMatch(/^event: turn_started$/m);

      // 3. the prompt is accepted.
      expect(await json<{ ok: boolean; message_id: string }>(2)).toMatchObject({ ok: true, message_id: expect.any(String) });

      // 4. the task id was found on the stream (nothing printed), and its output read.
      expect(await output(3)).toBe('');
      const taskOutput = await json<{ task_id: string; status: string; output_preview: string }>(4);
      expect(taskOutput.output_preview).toContain('hello from a task');
      expect(taskOutput.status).toBe('completed');
      expect(stream).toContain(`"task_id":"${taskOutput.task_id}"`);

      // 5. the wake through the capability URL kept in step 1.
      const woke = await json<{ ok: boolean; disposition: string }>(5);
      expect(woke.ok).toBe(true);
      expect(['triggered', 'coalesced']).toContain(woke.disposition);

      // 6. status, then stop.
      expect((await json<{ identity: { agent_id: string } }>(6)).identity.agent_id).toBe('demo');
      const stopped = await json<{ ok: boolean; agent: { agent: { status: string } } }>(7);
      expect(stopped.agent.agent.status).toBe('stopped');

      // 7. start says how to get a new capability URL; reset-callback gives one, kept in TRIGGER_URL.
      const started = await json<{ ok: boolean; agent: { agent: { status: string } }; hint: string }>(8);
      expect(started.agent.agent.status).not.toBe('stopped');
      expect(started.hint).toContain('reset-callback');
      expect(await output(9)).toBe('');
      const fresh = await readFile(join(out, 'trigger_url'), 'utf8');
      expect(fresh).toMatch(/\/callbacks\/wake\/[A-Za-z0-9_-]{43}$/);
      expect(fresh).not.toBe(created.external_trigger.trigger_url);
      const again = await call(server.base, 'POST', new URL(fresh).pathname, { raw: 'back', headers: { 'content-type': 'text/plain' } });
      expect(again.status, again.text).toBe(200);
    } finally {
      if (shell.pid !== undefined) {
        try {
          process.kill(-shell.pid, 'SIGTERM');
        } catch {
          // the group is gone already
        }
      }
    }
  }, 60_000);
});
