import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, openSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { DomainError, type TaskStatus } from '../../domain/index.js';
import { processGroupAlive, signalGroup } from './process-group.js';
import { ByteRing } from './ring-buffer.js';

/** Options of {@link startCommand}. */
export interface CommandOptions {
  /**
   * The shell command, run as `/bin/sh -c cmd` in a process group of its own.
   *
   * @example 'npm test -- --reporter=dot'
   */
  cmd: string;

  /**
   * Working directory. A directory that does not exist makes the task fail with reason
   * `spawn_failed`.
   *
   * @default process.cwd()
   * @example '/work/repo'
   */
  cwd?: string;

  /**
   * Variables added to (and overriding) the runtime's own environment; a shell without `PATH`
   * would be of little use, so the environment is never replaced wholesale.
   *
   * @default {} (the runtime's environment, unchanged)
   * @example { CI: '1', NODE_ENV: 'test' }
   */
  env?: Record<string, string>;

  /**
   * Whether stdin is a pipe that {@link CommandHandle.write} feeds. Otherwise stdin is
   * `/dev/null`, so a command that reads input sees end-of-file instead of hanging.
   *
   * @default false
   * @example true
   */
  acceptsInput?: boolean;

  /**
   * Milliseconds after which the process group is terminated (SIGTERM, `killGraceMs`, SIGKILL)
   * and the task fails with reason `timeout`. `null` means no limit.
   *
   * @default null
   * @example 600_000
   */
  timeoutMs?: number | null;

  /**
   * File receiving the full combined stdout and stderr, in arrival order. It is created (or
   * truncated) together with its directory before the command starts.
   *
   * @example '/var/lib/holon/agents/a1/tasks/t1/output.log'
   */
  artifactPath: string;

  /**
   * Bytes of output tail kept in memory for previews; the rest is only in the artifact.
   *
   * @default 8000
   * @example 16_384
   */
  previewBytes?: number;

  /**
   * Milliseconds between SIGTERM and SIGKILL when the process group is terminated.
   *
   * @default 2000
   * @example 5000
   */
  killGraceMs?: number;
}

/** Why a command ended the way it did, when its exit status alone does not say. */
export type CommandEndReason = 'timeout' | 'spawn_failed' | 'stopped';

export interface CommandResult {
  outcome: Extract<TaskStatus, 'completed' | 'failed' | 'cancelled'>;
  /** The shell's exit code; null when it was killed by a signal or never started. */
  exit_code: number | null;
  /** The signal that killed the shell, e.g. `SIGTERM`. */
  signal: string | null;
  reason: CommandEndReason | null;
  output_bytes: number;
  /** Message of a start failure (`spawn_failed`) or of a failure writing the artifact. */
  error: string | null;
}

export interface OutputEvent {
  chunk: Buffer;
  /** Total output bytes so far, this chunk included. */
  outputBytes: number;
}

export type OutputListener = (event: OutputEvent) => void;

export interface CommandHandle {
  /** The shell's pid, which is also its process group id; null if it never started. */
  readonly pid: number | null;
  readonly acceptsInput: boolean;
  /** Combined stdout+stderr bytes received so far. */
  readonly outputBytes: number;
  /** True once the output exceeded the preview buffer (the artifact still has all of it). */
  readonly truncated: boolean;
  /** True once {@link result} has settled. */
  readonly ended: boolean;
  /** The output tail as text, from at most `maxBytes` (default and cap: `previewBytes`) bytes. */
  preview(maxBytes?: number): string;
  /**
   * Writes `text` to stdin; resolves with the bytes written once they are handed to the pipe.
   * Rejects with a `DomainError('task_not_accepting_input')` if the command was not started with
   * `acceptsInput`, if its input was closed, or if it has exited.
   */
  write(text: string): Promise<number>;
  /** Closes stdin (end-of-file for the command). Idempotent. */
  closeInput(): void;
  /**
   * Terminates the process group: SIGTERM, then SIGKILL after `killGraceMs`. A second call
   * sends SIGKILL at once. Resolves when {@link result} has settled; idempotent after that.
   */
  stop(): Promise<void>;
  /** Subscribes to new output; returns the unsubscribe function. */
  onOutput(listener: OutputListener): () => void;
  /**
   * Settles once the shell has exited, nothing of its process group is left alive, and the
   * artifact is flushed and closed. Never rejects.
   */
  readonly result: Promise<CommandResult>;
}

const DEFAULT_PREVIEW_BYTES = 8000;
const DEFAULT_KILL_GRACE_MS = 2000;
const GROUP_POLL_MS = 25;
/** How long to keep waiting for the group to vanish after SIGKILL (only uninterruptible sleepers survive it). */
const AFTER_KILL_WAIT_MS = 2000;
/**
 * How long stdout/stderr may stay open once the group is gone: only a process that escaped the
 * group (setsid) can still hold them, and it must not keep the task running forever.
 */
const STDIO_DRAIN_MS = 2000;

/**
 * Starts `options.cmd` under supervision. Never throws for a command that cannot start: the
 * handle's result is then `failed` with reason `spawn_failed`. Throws a RangeError for invalid
 * numeric options.
 *
 * A command lives as long as its process group: when the shell exits, whatever it left running
 * in its group is terminated too, so a finished task never leaks processes.
 */
export function startCommand(options: CommandOptions): CommandHandle {
  return new CommandProcess(options);
}

type Termination = 'none' | 'term_sent' | 'kill_sent';

class CommandProcess implements CommandHandle {
  readonly pid: number | null = null;
  readonly acceptsInput: boolean;
  readonly result: Promise<CommandResult>;

  readonly #ring: ByteRing;
  readonly #killGraceMs: number;
  readonly #listeners = new Set<OutputListener>();
  #resolve: (result: CommandResult) => void = () => {};
  #child: ChildProcess | null = null;
  #stdin: Writable | null = null;
  #artifact: WriteStream | null = null;
  #error: string | null = null;
  #outputBytes = 0;
  #ended = false;
  #inputClosed = false;
  #exited = false;
  #stdioClosed = false;
  #finalizing = false;
  #stopRequested = false;
  #timedOut = false;
  #termination: Termination = 'none';
  #killedAt = 0;
  #waitingForDrain = false;
  #timeoutTimer: NodeJS.Timeout | null = null;
  #graceTimer: NodeJS.Timeout | null = null;

  constructor(options: CommandOptions) {
    const previewBytes = options.previewBytes ?? DEFAULT_PREVIEW_BYTES;
    const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
    const timeoutMs = options.timeoutMs ?? null;
    if (!Number.isInteger(previewBytes) || previewBytes <= 0) {
      throw new RangeError(`previewBytes must be a positive integer, got ${previewBytes}`);
    }
    if (!Number.isFinite(killGraceMs) || killGraceMs < 0) {
      throw new RangeError(`killGraceMs must be a non-negative number, got ${killGraceMs}`);
    }
    if (timeoutMs !== null && (!Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
      throw new RangeError(`timeoutMs must be a positive number or null, got ${timeoutMs}`);
    }
    this.#ring = new ByteRing(previewBytes);
    this.#killGraceMs = killGraceMs;
    this.acceptsInput = options.acceptsInput ?? false;
    this.result = new Promise<CommandResult>((resolve) => {
      this.#resolve = resolve;
    });

    try {
      mkdirSync(dirname(options.artifactPath), { recursive: true });
      // Opened synchronously so an unusable artifact path fails the start, not the run.
      const fd = openSync(options.artifactPath, 'w');
      this.#artifact = createWriteStream('', { fd });
    } catch (error) {
      this.#failToStart(`cannot create artifact ${options.artifactPath}: ${messageOf(error)}`);
      return;
    }
    this.#artifact.on('error', (error) => this.#onArtifactError(error));

    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', options.cmd], {
        cwd: options.cwd,
        env: options.env === undefined ? process.env : { ...process.env, ...options.env },
        detached: true,
        stdio: [this.acceptsInput ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      this.#failToStart(startFailure(options.cwd, error));
      return;
    }
    this.#child = child;
    this.pid = child.pid ?? null;

    child.once('error', (error) => {
      // After a successful spawn, 'error' only reports a failed kill/send, which we never use.
      if (this.pid === null) this.#failToStart(startFailure(options.cwd, error));
    });
    if (this.pid === null) return;

    this.#stdin = child.stdin;
    // EPIPE once the command stops reading must not crash the runtime; write() reports it.
    child.stdin?.on('error', () => {
      this.#inputClosed = true;
    });
    for (const stream of this.#outputs()) stream.on('data', (chunk: Buffer) => this.#onChunk(chunk));
    child.once('exit', (code, signal) => this.#onExit(code, signal));
    child.once('close', () => {
      this.#stdioClosed = true;
    });

    if (timeoutMs !== null) {
      this.#timeoutTimer = setTimeout(() => {
        this.#timeoutTimer = null;
        this.#timedOut = true;
        this.#terminate();
      }, timeoutMs);
    }
  }

  get outputBytes(): number {
    return this.#outputBytes;
  }

  get truncated(): boolean {
    return this.#ring.truncated;
  }

  get ended(): boolean {
    return this.#ended;
  }

  preview(maxBytes?: number): string {
    return this.#ring.preview(maxBytes);
  }

  write(text: string): Promise<number> {
    if (!this.acceptsInput) {
      return Promise.reject(inputRejected('the command was not started with acceptsInput', 'not_accepting_input'));
    }
    const stdin = this.#stdin;
    if (this.#exited || this.#ended) {
      return Promise.reject(inputRejected('the command has exited', 'exited'));
    }
    if (stdin === null || this.#inputClosed || !stdin.writable) {
      return Promise.reject(inputRejected('the command input is closed', 'input_closed'));
    }
    const bytes = Buffer.from(text, 'utf8');
    return new Promise<number>((resolve, reject) => {
      stdin.write(bytes, (error) => {
        if (error) reject(inputRejected(`writing to the command input failed: ${error.message}`, 'write_failed'));
        else resolve(bytes.length);
      });
    });
  }

  closeInput(): void {
    if (this.#inputClosed) return;
    this.#inputClosed = true;
    this.#stdin?.end();
  }

  async stop(): Promise<void> {
    if (!this.#exited && !this.#ended) {
      this.#stopRequested = true;
      this.#clearTimeoutTimer();
    }
    if (!this.#ended) this.#terminate();
    await this.result;
  }

  onOutput(listener: OutputListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #outputs(): Readable[] {
    const child = this.#child;
    if (child === null) return [];
    return [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
  }

  #onChunk(chunk: Buffer): void {
    this.#ring.write(chunk);
    this.#outputBytes += chunk.length;
    const artifact = this.#artifact;
    if (artifact !== null && this.#error === null && !artifact.write(chunk)) this.#awaitDrain(artifact);
    const event: OutputEvent = { chunk, outputBytes: this.#outputBytes };
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A faulty observer must not break supervision of the process.
        process.emitWarning(`command output listener threw: ${messageOf(error)}`);
      }
    }
  }

  /** Back-pressure: stop reading the pipes until the file has caught up, so memory stays bounded. */
  #awaitDrain(artifact: WriteStream): void {
    if (this.#waitingForDrain) return;
    this.#waitingForDrain = true;
    for (const stream of this.#outputs()) stream.pause();
    artifact.once('drain', () => this.#resumeOutputs());
  }

  #resumeOutputs(): void {
    if (!this.#waitingForDrain) return;
    this.#waitingForDrain = false;
    for (const stream of this.#outputs()) stream.resume();
  }

  #onArtifactError(error: Error): void {
    this.#error ??= `writing artifact failed: ${error.message}`;
    // No 'drain' will come from a failed stream; keep consuming output for the preview.
    this.#resumeOutputs();
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exited = true;
    this.#clearTimeoutTimer();
    const outcome = this.#outcome(code);
    void this.#finish({
      outcome: outcome.outcome,
      exit_code: code,
      signal,
      reason: outcome.reason,
    });
  }

  #outcome(code: number | null): Pick<CommandResult, 'outcome' | 'reason'> {
    if (this.#stopRequested) return { outcome: 'cancelled', reason: 'stopped' };
    if (this.#timedOut) return { outcome: 'failed', reason: 'timeout' };
    if (code === 0) return { outcome: 'completed', reason: null };
    return { outcome: 'failed', reason: null };
  }

  #failToStart(message: string): void {
    if (this.#finalizing) return;
    this.#error = message;
    void this.#finish({ outcome: 'failed', exit_code: null, signal: null, reason: 'spawn_failed' });
  }

  async #finish(end: Pick<CommandResult, 'outcome' | 'exit_code' | 'signal' | 'reason'>): Promise<void> {
    if (this.#finalizing) return;
    this.#finalizing = true;
    if (this.pid !== null) {
      await this.#awaitGroupGone(this.pid);
      await this.#awaitStdioClosed();
    }
    this.#clearGraceTimer();
    this.#inputClosed = true;
    this.#stdin?.destroy();
    await this.#closeArtifact();
    this.#ended = true;
    this.#resolve({ ...end, output_bytes: this.#outputBytes, error: this.#error });
  }

  async #awaitGroupGone(pgid: number): Promise<void> {
    if (!(await processGroupAlive(pgid))) return;
    if (this.#termination === 'none') this.#terminate();
    for (;;) {
      await delay(GROUP_POLL_MS);
      if (!(await processGroupAlive(pgid))) return;
      if (this.#termination === 'kill_sent' && Date.now() - this.#killedAt > AFTER_KILL_WAIT_MS) return;
    }
  }

  async #awaitStdioClosed(): Promise<void> {
    const child = this.#child;
    if (child === null || this.#stdioClosed) return;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const timer = setTimeout(() => {
      for (const stream of this.#outputs()) stream.destroy();
    }, STDIO_DRAIN_MS);
    await closed;
    clearTimeout(timer);
  }

  async #closeArtifact(): Promise<void> {
    const artifact = this.#artifact;
    if (artifact === null || artifact.closed) return;
    const closed = new Promise<void>((resolve) => artifact.once('close', () => resolve()));
    if (this.#error === null) artifact.end();
    else artifact.destroy();
    await closed;
  }

  /** First call: SIGTERM now, SIGKILL after the grace. Any later call: SIGKILL now. */
  #terminate(): void {
    const pgid = this.pid;
    if (pgid === null) return;
    if (this.#termination === 'none') {
      this.#termination = 'term_sent';
      signalGroup(pgid, 'SIGTERM');
      this.#graceTimer = setTimeout(() => this.#kill(pgid), this.#killGraceMs);
    } else if (this.#termination === 'term_sent') {
      this.#kill(pgid);
    }
  }

  #kill(pgid: number): void {
    this.#clearGraceTimer();
    if (this.#termination === 'kill_sent') return;
    this.#termination = 'kill_sent';
    this.#killedAt = Date.now();
    signalGroup(pgid, 'SIGKILL');
  }

  #clearTimeoutTimer(): void {
    if (this.#timeoutTimer !== null) clearTimeout(this.#timeoutTimer);
    this.#timeoutTimer = null;
  }

  #clearGraceTimer(): void {
    if (this.#graceTimer !== null) clearTimeout(this.#graceTimer);
    this.#graceTimer = null;
  }
}

function inputRejected(message: string, reason: string): DomainError {
  return new DomainError('task_not_accepting_input', `cannot write to command input: ${message}`, { reason });
}

function startFailure(cwd: string | undefined, error: unknown): string {
  // Node reports a missing cwd as "spawn /bin/sh ENOENT", which points at the wrong culprit.
  return `failed to start /bin/sh in ${cwd ?? process.cwd()}: ${messageOf(error)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
