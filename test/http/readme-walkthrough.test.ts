import { exec, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, waitFor, type TestServer } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const sh = promisify(exec);

/** The curl lines of the README's walk-through, in order, exactly as a reader would paste them. */
async function walkthrough(): Promise<string[]> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A walk through the API'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  // Join backslash-continued lines, keep the curl commands.
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('curl '));
}

describe('the README walk-through, run against a real server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('every request of the walk-through does what the README says', async () => {
    const lines = await walkthrough();
    expect(lines).toHaveLength(7);
    const host = new URL(server.base).host;
    const local = (line: string) => line.replaceAll('localhost:8080', host);
    const run = async (line: string) => (await sh(local(line), { timeout: 20_000 })).stdout;

    // 1. create
    const created = JSON.parse(await run(lines[0] as string)) as { ok: boolean; agent: { phase: string }; external_trigger: { trigger_url: string } };
    expect(created.ok).toBe(true);
    expect(created.agent.phase).toBe('active');
    const triggerUrl = created.external_trigger.trigger_url;
    expect(triggerUrl).toMatch(/\/callbacks\/wake\/[A-Za-z0-9_-]{43}$/);

    // 2. the event stream, in the background as the README runs it
    const streamLine = local((lines[1] as string).replace(/\s*&$/, ''));
    expect(lines[1]).toMatch(/&$/);
    const stream = spawn('sh', ['-c', streamLine]);
    let streamed = '';
    stream.stdout.on('data', (chunk: Buffer) => (streamed += chunk.toString('utf8')));
    try {
      // 3. prompt with a directive that runs a command
      const prompted = JSON.parse(await run(lines[2] as string)) as { ok: boolean; message_id: string };
      expect(prompted.ok).toBe(true);
      const taskId = await waitFor(async () => /"task_id":"(task_[a-z0-9]+)"/.exec(streamed)?.[1], 15_000);
      expect(streamed).toMatch(/^event: transition_committed$/m);

      // 4. the task's output
      const output = JSON.parse(await run((lines[3] as string).replace('<task_id>', taskId))) as { output_preview: string };
      expect(output.output_preview).toContain('hello from a task');

      // 5. wake through the capability URL
      const woke = JSON.parse(await run((lines[4] as string).replace('<trigger_url>', triggerUrl))) as { ok: boolean; disposition: string };
      expect(woke.ok).toBe(true);
      expect(['triggered', 'coalesced']).toContain(woke.disposition);

      // 6. status, then stop
      const status = JSON.parse(await run(lines[5] as string)) as { identity: { agent_id: string } };
      expect(status.identity.agent_id).toBe('demo');
      const stopped = JSON.parse(await run(lines[6] as string)) as { ok: boolean; agent: { agent: { status: string } } };
      expect(stopped.agent.agent.status).toBe('stopped');
    } finally {
      stream.kill();
    }
  }, 60_000);
});
