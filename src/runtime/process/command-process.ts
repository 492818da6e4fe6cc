import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { DomainError, type TaskStatus } from '../../domain/index.js';
import { FileFollower } from './file-follower.js';
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
   * Working directory. A directory that does not exist makes the command fail with reason
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
   * and the command fails with reason `timeout`. `null` means no limit.
   *
   * @default null
   * @example 600_000
   */
  timeoutMs?: number | null;

  /**
   * File receiving the full combined stdout and stderr, in the order they were written. It is
   * created (or truncated) together with its directory before the command starts.
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
  /** Message of a start failure (`spawn_failed`) or of a failure reading the output back. */
  error: string | null;
}

/** Called with the total output bytes whenever new output has been read. */
export type OutputListener = (outputBytes: number) => void;

export interface CommandHandle {
  /** The shell's pid, which is also its process group id; null if it never started. */
  readonly pid: number | null;
  readonly acceptsInput: boolean;
  /** Combined stdout+stderr bytes seen so far. */
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
   * Settles once the shell has exited, nothing of its process group is left alive, and all of
   * the output is in the artifact and has been counted. Never rejects.
   */
  readonly result: Promise<CommandResult>;
}

const DEFAULT_PREVIEW_BYTES = 8000;
const DEFAULT_KILL_GRACE_MS = 2000;
const GROUP_POLL_MS = 25;
/** How long to keep waiting for the group to vanish after SIGKILL (only uninterruptible sleepers survive it). */
const AFTER_KILL_WAIT_MS = 2000;
/** How long the output may stay held open once the group is gone (see #awaitOutputReleased). */
const OUTPUT_RELEASE_MS = 2000;
/** Created or truncated; O_APPEND, so stdout and stderr writes land at the end in the order written. */
const ARTIFACT_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND;
/** Fallback for missed change notifications; also the worst-case latency of a preview. */
const OUTPUT_POLL_MS = 100;

/**
 * Starts `options.cmd` under supervision. Never throws for a command that cannot start: the
 * handle's result is then `failed` with reason `spawn_failed`. Throws a RangeError for invalid
 * numeric options.
 *
 * The command writes its output straight into the artifact file, and the runtime reads it back
 * into the preview ring through one reused buffer: no output byte passes through this process
 * (reading a pipe in Node allocates a buffer per read, and that garbage alone grew RSS by ~30 MB
 * on a 50 MB output), so memory stays flat however much a command prints. One spawn per command.
 *
 * A command lives as long as its process group: when the shell exits, whatever it left running
 * in its group is terminated too, so a finished command never leaks processes.
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
  #follower: FileFollower | null = null;
  /** Settles once no process holds the command's output any more (see the spawn's fd 3). */
  #outputReleased: Promise<void> | null = null;
  #outputHolders: Readable | null = null;
  #stdin: Writable | null = null;
  #error: string | null = null;
  #ended = false;
  #inputClosed = false;
  #exited = false;
  #finishing = false;
  #stopRequested = false;
  #timedOut = false;
  #termination: Termination = 'none';
  #killedAt = 0;
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

    let artifactFd: number;
    try {
      mkdirSync(dirname(options.artifactPath), { recursive: true });
      // Synchronous, so an unusable artifact path fails the start rather than the run.
      artifactFd = openSync(options.artifactPath, ARTIFACT_FLAGS);
    } catch (error) {
      this.#failToStart(`cannot create artifact ${options.artifactPath}: ${messageOf(error)}`);
      return;
    }

    try {
      this.#follower = new FileFollower({
        path: options.artifactPath,
        pollMs: OUTPUT_POLL_MS,
        onData: (chunk) => this.#onOutput(chunk),
        onError: (error) => {
          this.#error ??= `reading the artifact back failed: ${error.message}`;
        },
      });
    } catch (error) {
      closeSync(artifactFd);
      this.#failToStart(`cannot set up output capture: ${messageOf(error)}`);
      return;
    }

    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', options.cmd], {
        cwd: options.cwd,
        env: options.env === undefined ? process.env : { ...process.env, ...options.env },
        detached: true,
        // stdout and stderr are the artifact itself. fd 3 is a pipe nobody writes to: every process
        // of the command inherits it, so it reaches end-of-file only once none of them is left,
        // even one that escaped the process group.
        stdio: [this.acceptsInput ? 'pipe' : 'ignore', artifactFd, artifactFd, 'pipe'],
      });
    } catch (error) {
      this.#failToStart(startFailure(options.cwd, error));
      return;
    } finally {
      // The command holds its own descriptors; ours would only keep the file open.
      closeSync(artifactFd);
    }
    this.pid = child.pid ?? null;
    const holders = child.stdio[3] as Readable | null | undefined;
    if (this.pid !== null && holders) {
      this.#outputHolders = holders;
      this.#outputReleased = new Promise<void>((resolve) => {
        holders.once('close', () => resolve());
        holders.once('error', () => resolve());
      });
      holders.resume();
    }

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
    child.once('exit', (code, signal) => this.#onExit(code, signal));

    if (timeoutMs !== null) {
      this.#timeoutTimer = setTimeout(() => {
        this.#timeoutTimer = null;
        this.#timedOut = true;
        this.#terminate();
      }, timeoutMs);
    }
  }

  get outputBytes(): number {
    return this.#ring.totalBytes;
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
    if (this.#exited || this.#ended) {
      return Promise.reject(inputRejected('the command has exited', 'exited'));
    }
    const stdin = this.#stdin;
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

  #onOutput(chunk: Buffer): void {
    this.#ring.write(chunk);
    const outputBytes = this.#ring.totalBytes;
    for (const listener of [...this.#listeners]) {
      try {
        listener(outputBytes);
      } catch (error) {
        // A faulty observer must not break supervision of the process.
        process.emitWarning(`command output listener threw: ${messageOf(error)}`);
      }
    }
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exited = true;
    this.#clearTimeoutTimer();
    void this.#finish({ ...this.#outcome(code), exit_code: code, signal });
  }

  #outcome(code: number | null): Pick<CommandResult, 'outcome' | 'reason'> {
    if (this.#stopRequested) return { outcome: 'cancelled', reason: 'stopped' };
    if (this.#timedOut) return { outcome: 'failed', reason: 'timeout' };
    if (code === 0) return { outcome: 'completed', reason: null };
    return { outcome: 'failed', reason: null };
  }

  #failToStart(message: string): void {
    if (this.#finishing) return;
    this.#error = message;
    void this.#finish({ outcome: 'failed', exit_code: null, signal: null, reason: 'spawn_failed' });
  }

  async #finish(end: Pick<CommandResult, 'outcome' | 'exit_code' | 'signal' | 'reason'>): Promise<void> {
    if (this.#finishing) return;
    this.#finishing = true;
    if (this.pid !== null) await this.#awaitGroupGone(this.pid);
    this.#clearGraceTimer();
    this.#inputClosed = true;
    this.#stdin?.destroy();
    await this.#awaitOutputReleased();
    const follower = this.#follower;
    if (follower !== null) {
      await follower.catchUp();
      await follower.close();
    }
    this.#ended = true;
    this.#resolve({ ...end, output_bytes: this.#ring.totalBytes, error: this.#error });
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

  /** Once no process holds the output, every byte the command wrote is in the artifact. */
  async #awaitOutputReleased(): Promise<void> {
    const released = this.#outputReleased;
    if (released === null) return;
    // Only a process that escaped the group (setsid) can still hold the output by now.
    let timer: NodeJS.Timeout | undefined;
    const abandoned = await Promise.race([
      released.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), OUTPUT_RELEASE_MS);
      }),
    ]);
    clearTimeout(timer);
    if (abandoned) {
      this.#outputHolders?.destroy();
      this.#error ??= 'a process that left the process group still holds the output open; what it writes later is not counted';
    }
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
