import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from '../http/helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Launched {
  launcher: ChildProcess;
  /** The pid the server reports in its listening line. */
  serverPid: number;
  base: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const spawned = new Set<number>();
afterAll(() => {
  for (const pid of spawned) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Starts the server through a launcher (`npm start -- ...`, `npx holon-xstate serve ...`) as a user would. */
async function launch(command: string, args: string[]): Promise<Launched> {
  const launcher = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOLON_TOKEN: '' } });
  if (launcher.pid !== undefined) spawned.add(launcher.pid);
  let text = '';
  launcher.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  launcher.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    launcher.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const [, base = '', pid = ''] = await waitFor(async () => {
    if (launcher.exitCode !== null) throw new Error(`${command} exited early:\n${text}`);
    return /listening on (http:\/\/\S+) \(pid (\d+)\)/.exec(text) ?? undefined;
  }, 90_000);
  spawned.add(Number(pid));
  return { launcher, serverPid: Number(pid), base, output: () => text, exited };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether something accepts TCP connections at `base`. */
function accepting(base: string): Promise<boolean> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The lease left by a clean stop: released (expired at the epoch), the writer lock gone. */
async function expectReleased(dataDir: string): Promise<void> {
  const lease = JSON.parse(await readFile(join(dataDir, 'lease.json'), 'utf8')) as { expires_at: string };
  expect(lease.expires_at).toBe('1970-01-01T00:00:00.000Z');
  await expect(stat(join(dataDir, 'writer.lock'))).rejects.toMatchObject({ code: 'ENOENT' });
}

const serveArgs = (dataDir: string): string[] => ['--port', '0', '--data-dir', dataDir, '--log-format', 'json'];

describe('the launchers', () => {
  it('npm start runs the server as its own child process; SIGTERM to npm stops it cleanly and a restart needs no wait', async () => {
    const dataDir = await tempDir('holon-launch-');
    try {
      const first = await launch('npm', ['start', '--', ...serveArgs(dataDir)]);
      // One process does the work, and it is npm's child (no sh or tsx in between).
      const status = await readFile(`/proc/${first.serverPid}/stat`, 'utf8');
      expect(Number(status.slice(status.lastIndexOf(')') + 2).split(' ')[1])).toBe(first.launcher.pid);
      expect((await fetch(`${first.base}/healthz`)).status).toBe(200);

      first.launcher.kill('SIGTERM');
      const exit = await first.exited;
      expect(exit.code === 0 || exit.signal === 'SIGTERM', JSON.stringify(exit)).toBe(true);
      await waitFor(async () => !alive(first.serverPid), 10_000);
      expect(first.output()).toContain('SIGTERM received, closing');
      expect(first.output()).toContain('closed (lease released)');
      expect(await accepting(first.base)).toBe(false);
      await expectReleased(dataDir);

      const second = await launch('npm', ['start', '--', ...serveArgs(dataDir)]);
      expect(second.output()).not.toContain('waiting up to');
      second.launcher.kill('SIGINT');
      await second.exited;
      await waitFor(async () => !alive(second.serverPid), 10_000);
      await expectReleased(dataDir);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('npx holon-xstate serve works without a build, and the server notices when npx is killed', async () => {
    const dataDir = await tempDir('holon-launch-');
    try {
      const served = await launch('npx', ['--yes', 'holon-xstate', 'serve', ...serveArgs(dataDir)]);
      expect((await fetch(`${served.base}/healthz`)).status).toBe(200);
      // SIGKILL cannot be passed on: the server sees its launcher gone and closes by itself.
      served.launcher.kill('SIGKILL');
      await waitFor(async () => !alive(served.serverPid), 15_000);
      expect(await accepting(served.base)).toBe(false);
      await expectReleased(dataDir);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('a restart after kill -9 says that it waits for the previous holder\'s lease, and then serves', async () => {
    const dataDir = await tempDir('holon-launch-');
    try {
      const node = (): string[] => ['bin/holon-xstate.js', 'serve', ...serveArgs(dataDir)];
      const crashed = await launch(process.execPath, node());
      crashed.launcher.kill('SIGKILL');
      await crashed.exited;
      const restarted = await launch(process.execPath, node());
      expect(restarted.output()).toMatch(/waiting up to 12 s for the previous holder's lease \(the write lease is held by node-\d+ until /);
      expect((await fetch(`${restarted.base}/healthz`)).status).toBe(200);
      restarted.launcher.kill('SIGTERM');
      await restarted.exited;
      await expectReleased(dataDir);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('a server that cannot start says why in its log format and exits 1', async () => {
    const first = await tempDir('holon-launch-');
    const second = await tempDir('holon-launch-');
    try {
      const running = await launch(process.execPath, ['bin/holon-xstate.js', 'serve', ...serveArgs(first)]);
      const port = new URL(running.base).port;
      const refused = spawn(process.execPath, ['bin/holon-xstate.js', 'serve', '--port', port, '--data-dir', second, '--log-format', 'json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      refused.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      refused.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      expect(await new Promise((resolve) => refused.once('exit', resolve))).toBe(1);
      const lines = out.split('\n').filter((line) => line.length > 0);
      // Every line is a JSON record, the last one the fatal reason.
      const records = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
      expect(records.at(-1)).toMatchObject({ level: 60, msg: expect.stringContaining(`cannot listen on 127.0.0.1:${port}`) });
      await expectReleased(second);
      running.launcher.kill('SIGTERM');
      await running.exited;
    } finally {
      await rm(first, { recursive: true, force: true });
      await rm(second, { recursive: true, force: true });
    }
  }, 120_000);
});
