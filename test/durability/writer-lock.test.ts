import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { eventually, TempDirs } from './fixtures/harness.js';

/**
 * Issue 15.5: `writer.lock` is a kernel lock (flock) its holder loses when it dies. A lock a dead
 * instance left behind — whatever pid it names, live or not, the new process's own included —
 * never blocks a start; two live instances still never both write. Real `serve` processes.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dirs = new TempDirs();
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});
afterAll(() => dirs.cleanup());

interface Served {
  child: ChildProcess;
  output: () => string;
  /** The address once it listens, or the exit code if it exits first. */
  outcome: Promise<{ base: string } | { code: number | null }>;
}

function serve(dataDir: string): Served {
  // One node id for every run: a restart re-takes its own unexpired lease at once, so the test
  // exercises writer.lock alone, not the wait for the lease of a node that died.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--data-dir', dataDir, '--node-id', 'lock-test', '--log-level', 'warn'], {
    cwd: ROOT,
    env: { ...process.env, HOLON_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const outcome = new Promise<{ base: string } | { code: number | null }>((resolve) => {
    const onData = () => {
      const base = /listening on (http:\/\/[^\s]+)/.exec(text)?.[1];
      if (base) resolve({ base });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => resolve({ code }));
  });
  return { child, output: () => text, outcome };
}

async function listening(served: Served): Promise<string> {
  const outcome = await served.outcome;
  if (!('base' in outcome)) throw new Error(`serve exited with ${outcome.code}:\n${served.output()}`);
  return outcome.base;
}

async function createAgent(base: string, agentId: string): Promise<void> {
  const reply = await fetch(`${base}/api/control/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: agentId }) });
  expect(reply.status).toBe(201);
}

async function statusOf(base: string, agentId: string): Promise<number> {
  return (await fetch(`${base}/api/agents/${agentId}/status`)).status;
}

function killed(served: Served): Promise<void> {
  return new Promise((resolve) => {
    served.child.once('exit', () => resolve());
    served.child.kill('SIGKILL');
  });
}

describe('writer.lock after kill -9', () => {
  it.each([
    ['pid 1 (a container restart gives the server pid 1 again)', () => 1],
    ['a live process (this test runner)', () => process.pid],
    ['a pid that does not exist', () => 99_999_999],
  ])('a lock left by a dead server and naming %s does not block the next start', async (_name, pidOf) => {
    const dataDir = await dirs.make();
    const first = serve(dataDir);
    await createAgent(await listening(first), 'survivor');
    await killed(first);
    await writeFile(join(dataDir, 'writer.lock'), `${pidOf()}\n`);

    const second = serve(dataDir);
    const base = await listening(second);
    expect(await statusOf(base, 'survivor')).toBe(200);
    // The lock names the process that holds it now.
    expect(Number(await readFile(join(dataDir, 'writer.lock'), 'utf8'))).toBe(second.child.pid);
  });

  it('two live servers never both write: the second exits non-zero naming the holder, the first keeps serving', async () => {
    const dataDir = await dirs.make();
    const first = serve(dataDir);
    const base = await listening(first);
    const second = serve(dataDir);
    const outcome = await second.outcome;
    expect(outcome).toEqual({ code: expect.any(Number) });
    expect('code' in outcome && outcome.code).not.toBe(0);
    expect(second.output()).toContain(`data directory ${dataDir} is already used by process ${first.child.pid}`);
    await createAgent(base, 'still-mine');
    expect(await statusOf(base, 'still-mine')).toBe(200);
    // Once the holder is gone the next start takes the directory.
    await killed(first);
    const third = serve(dataDir);
    const next = await listening(third);
    await eventually(async () => ((await statusOf(next, 'still-mine')) === 200 ? true : undefined));
  });
});
