import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { DomainError, type TaskRecord } from '../../domain/index.js';
import { startCommand, type CommandHandle } from '../process/index.js';

/** What a task's output looks like on disk or live. */
export interface OutputView {
  live: boolean;
  preview: string;
  output_bytes: number;
  artifact_bytes: number;
}

/**
 * The command processes this instance runs: one handle per running task, the environment a task
 * was asked to start with, and the artifact file each one's output goes to.
 */
export class CommandProcesses {
  private readonly live = new Map<string, CommandHandle>();
  /** The agent of each live task (a lost agent's processes stop without its document). */
  private readonly agentOf = new Map<string, string>();
  /** The `env` of an ExecCommand, kept until its task starts (never stored). */
  private readonly envs = new Map<string, Record<string, string>>();

  constructor(
    private readonly dataDir: string,
    private readonly killGraceMs: number,
  ) {}

  /** Starts the command of `task` (committed as queued) and keeps its handle until its result is taken. */
  start(agentId: string, task: TaskRecord & { cmd: string }): CommandHandle {
    const env = this.envs.get(task.id);
    const handle = startCommand({
      cmd: task.cmd,
      ...(task.workdir ? { cwd: task.workdir } : {}),
      ...(env ? { env } : {}),
      acceptsInput: task.accepts_input,
      timeoutMs: task.timeout_ms,
      artifactPath: this.artifactPath(agentId, task.id),
      killGraceMs: this.killGraceMs,
    });
    this.envs.delete(task.id);
    this.live.set(task.id, handle);
    this.agentOf.set(task.id, agentId);
    return handle;
  }

  setEnv(taskId: string, env: Record<string, string>): void {
    this.envs.set(taskId, env);
  }

  get(taskId: string): CommandHandle | undefined {
    return this.live.get(taskId);
  }

  /** The task's handle, which is no longer kept (its process ended, or its record ends now). */
  take(taskId: string): CommandHandle | undefined {
    const handle = this.live.get(taskId);
    this.live.delete(taskId);
    this.agentOf.delete(taskId);
    return handle;
  }

  /** Ends the processes of these tasks (SIGTERM, grace, SIGKILL of each group). */
  async stop(tasks: readonly TaskRecord[]): Promise<void> {
    await Promise.all(tasks.map((task) => this.live.get(task.id)?.stop().catch(() => undefined)));
  }

  /** Stops every process at once, without waiting (a lost lease). */
  abandonAll(): void {
    for (const handle of this.live.values()) void handle.stop().catch(() => undefined);
  }

  /** Stops the processes of one agent at once and forgets them, without waiting (another node took the agent over). */
  abandonAgent(agentId: string): void {
    for (const [taskId, owner] of this.agentOf) {
      if (owner !== agentId) continue;
      const handle = this.take(taskId);
      void handle?.stop().catch(() => undefined);
    }
  }

  /** Stops every process and forgets them (close). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.live.values()].map((handle) => handle.stop().catch(() => undefined)));
    this.live.clear();
    this.agentOf.clear();
  }

  /** The task's output so far: live from its process, else the tail of its artifact. */
  async output(agentId: string, taskId: string, maxBytes: number): Promise<OutputView> {
    const path = this.artifactPath(agentId, taskId);
    const artifactBytes = await stat(path).then((s) => s.size).catch(() => 0);
    const handle = this.live.get(taskId);
    if (handle) return { live: true, preview: handle.preview(maxBytes), output_bytes: handle.outputBytes, artifact_bytes: artifactBytes };
    return { live: false, preview: await readTail(path, maxBytes), output_bytes: artifactBytes, artifact_bytes: artifactBytes };
  }

  async artifact(agentId: string, taskId: string): Promise<Readable> {
    const path = this.artifactPath(agentId, taskId);
    await stat(path).catch(() => {
      throw new DomainError('task_not_found', `task ${taskId} has no output artifact yet`);
    });
    return createReadStream(path);
  }

  private artifactPath(agentId: string, taskId: string): string {
    return join(this.dataDir, 'artifacts', agentId, `${taskId}.log`);
  }
}

async function readTail(path: string, maxBytes: number): Promise<string> {
  const handle = await open(path, 'r').catch(() => null);
  if (!handle) return '';
  try {
    const size = (await handle.stat()).size;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString('utf8').replace(/^[\u0080-\u00bf]+/, '');
  } finally {
    await handle.close();
  }
}
