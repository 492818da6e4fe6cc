import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../pg/throwaway-cluster.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Real `serve` processes on one database (issue 19's acceptance runs): each node has its own
 * port, chosen once so a restart comes back at the same address, its own data dir, its node id
 * and `--advertise-url`. The helpers send real signals: SIGKILL (a crash), SIGSTOP/SIGCONT (a
 * paused node: its lease runs out while it cannot tell), SIGTERM (a clean stop), and start again.
 */
export interface ClusterNode {
  readonly nodeId: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>`: where it listens, and what it advertises. */
  readonly url: string;
  /** The current process (`null` before the first start). */
  readonly child: ChildProcess | null;
  /** Everything the current process printed (stdout and stderr). */
  output(): string;
  /** The current process's exit code (or the signal's name), once it ended. */
  readonly exited: Promise<number | string>;
  /** Resolves once the current process is listening; rejects if it exits first. */
  listening(timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
  pause(): void;
  resume(): void;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | string>;
  /** Starts a process for this node (same id, port, data dir each time); the previous one must have ended. */
  start(): void;
}

export interface NodeSet {
  nodes: ClusterNode[];
  /** SIGKILLs whatever still runs and removes the data dirs. */
  close(): Promise<void>;
}

export interface NodeOptions {
  /** The database, as `serve --store` takes it. */
  storeUrl: string;
  count: number;
  /** Node ids are `<prefix>-1` … (default `node`). */
  prefix?: string;
  /** Extra `serve` arguments for every node. */
  args?: string[];
  /** Whether the node's output is also written to this process's stderr (default no). */
  echo?: boolean;
  /** Whether every node starts at once (default), or each waits for its `start()`. */
  started?: boolean;
  /** The nodes' ports, in order (default: free ports the kernel picks). */
  ports?: number[];
}

interface Run {
  child: ChildProcess | null;
  output: () => string;
  exited: Promise<number | string>;
}

const NOT_STARTED: Run = { child: null, output: () => '', exited: Promise.resolve('not started') };
const running = (run: Run): run is Run & { child: ChildProcess } => run.child !== null && run.child.exitCode === null && run.child.signalCode === null;

function spawnNode(storeUrl: string, nodeId: string, port: number, dataDir: string, args: string[], echo: boolean): Run {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', String(port), '--store', storeUrl, '--data-dir', dataDir, '--node-id', nodeId, '--advertise-url', `http://127.0.0.1:${port}`, '--log-level', 'warn', '--log-format', 'pretty', ...args],
    { cwd: ROOT, env: { ...process.env, HOLON_TOKEN: '', HOLON_DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let text = '';
  const take = (chunk: Buffer): void => {
    const fresh = chunk.toString('utf8');
    if (echo) {
      // Whole lines only, each under the node's name.
      const from = text.lastIndexOf('\n') + 1;
      const lines = (text.slice(from) + fresh).split('\n');
      lines.pop();
      for (const line of lines) process.stderr.write(`[${nodeId}] ${line}\n`);
    }
    text += fresh;
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { child, output: () => text, exited };
}

/** Starts `count` nodes at once on `storeUrl`. */
export async function startNodes({ storeUrl, count, prefix = 'node', args = [], echo = false, started = true, ports: given }: NodeOptions): Promise<NodeSet> {
  const ports = given ?? (await Promise.all(Array.from({ length: count }, () => freePort())));
  const dirs: string[] = [];
  const nodes = ports.map((port, i): ClusterNode => {
    const nodeId = `${prefix}-${i + 1}`;
    const dataDir = mkdtempSync(join(tmpdir(), `holon-cluster-${nodeId}-`));
    dirs.push(dataDir);
    let run = started ? spawnNode(storeUrl, nodeId, port, dataDir, args, echo) : NOT_STARTED;
    const signal = (name: NodeJS.Signals): void => {
      if (running(run)) run.child.kill(name);
    };
    return {
      nodeId,
      port,
      url: `http://127.0.0.1:${port}`,
      get child() {
        return run.child;
      },
      output: () => run.output(),
      get exited() {
        return run.exited;
      },
      async listening(timeoutMs = 90_000) {
        const deadline = Date.now() + timeoutMs;
        while (!/listening on http:\/\//.test(run.output())) {
          if (!running(run)) throw new Error(`${nodeId} exited before listening:\n${run.output()}`);
          if (Date.now() > deadline) throw new Error(`${nodeId} did not listen within ${timeoutMs} ms:\n${run.output()}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      },
      async kill() {
        signal('SIGKILL');
        await run.exited;
      },
      pause: () => signal('SIGSTOP'),
      resume: () => signal('SIGCONT'),
      async stop() {
        signal('SIGCONT');
        signal('SIGTERM');
        return run.exited;
      },
      start() {
        if (running(run)) throw new Error(`${nodeId} is still running`);
        run = spawnNode(storeUrl, nodeId, port, dataDir, args, echo);
      },
    };
  });
  return {
    nodes,
    async close() {
      await Promise.all(nodes.map((node) => node.kill()));
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
