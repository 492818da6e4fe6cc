import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = join(here, '..', '..');
const workerScript = join(here, 'fixtures', 'store-worker.ts');

export interface WorkerReply {
  id: number;
  ok: boolean;
  result?: unknown;
  code?: string;
  message?: string;
}

/** Drives `fixtures/store-worker.ts` in a child `node --import tsx` process. */
export class StoreWorker {
  private nextId = 1;
  private readonly waiting = new Map<number, (reply: WorkerReply) => void>();
  private readonly commitWatchers: Array<{ count: number; resolve(): void }> = [];
  private stderr = '';
  /** Versions the worker reported as committed (acknowledged to its caller). */
  readonly acknowledged = new Map<string, number>();
  commits = 0;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    createInterface({ input: child.stdout }).on('line', (line) => this.onLine(line));
  }

  static start(dataDir: string, mode: 'exclusive' | 'shared', checkpointBytes?: number): StoreWorker {
    const extra = checkpointBytes === undefined ? [] : [String(checkpointBytes)];
    const child = spawn(process.execPath, ['--import', 'tsx', workerScript, dataDir, mode, ...extra], {
      cwd: projectRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new StoreWorker(child);
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`worker did not start: ${this.stderr}`);
    return this.child.pid;
  }

  request(op: string, fields: Record<string, unknown> = {}): Promise<WorkerReply> {
    const id = this.nextId;
    this.nextId += 1;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, resolve);
      this.exited.then(() => reject(new Error(`worker exited before answering ${op}: ${this.stderr}`)));
      this.child.stdin.write(`${JSON.stringify({ id, op, ...fields })}\n`);
    });
  }

  /** Like `request`, but fails the test with the worker's error when it did not succeed. */
  async ok(op: string, fields: Record<string, unknown> = {}): Promise<unknown> {
    const reply = await this.request(op, fields);
    if (!reply.ok) throw new Error(`worker ${op} failed: ${reply.code} ${reply.message}`);
    return reply.result;
  }

  /** Resolves once the worker has reported `count` commits in total. */
  commitsReached(count: number): Promise<void> {
    if (this.commits >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.commitWatchers.push({ count, resolve });
      this.exited.then(() => reject(new Error(`worker exited after ${this.commits} commits: ${this.stderr}`)));
    });
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  private onLine(line: string): void {
    const message = JSON.parse(line) as Partial<WorkerReply> & { committed?: number; agent_id?: string; loop_failed?: string };
    if (message.loop_failed !== undefined) {
      this.stderr += `loop failed: ${message.loop_failed}\n`;
      return;
    }
    if (message.committed !== undefined && message.agent_id !== undefined) {
      this.acknowledged.set(message.agent_id, message.committed);
      this.commits += 1;
      for (const watcher of this.commitWatchers.filter((w) => this.commits >= w.count)) {
        this.commitWatchers.splice(this.commitWatchers.indexOf(watcher), 1);
        watcher.resolve();
      }
      return;
    }
    if (message.id !== undefined) {
      this.waiting.get(message.id)?.({ ok: false, ...message, id: message.id });
      this.waiting.delete(message.id);
    }
  }
}
