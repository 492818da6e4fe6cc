import { access, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { EventObject, InspectionEvent } from 'xstate';
import { Runtime, type EffectFault, type RuntimeOptions } from '../../../src/runtime/runtime.js';
import { ControlledRunner } from './controlled-runner.js';
import { GateStore } from './gate-store.js';

/** The agent document as the lowdb store keeps it on disk (`agents/<id>/doc.json`). */
export interface StoredDocFile {
  version: number;
  last_event_seq: number;
  doc: Record<string, unknown>;
}

/** Where data dirs go when set (isolated.ts points a child process at a dir it removes itself). */
export const TMPDIR_VARIABLE = 'HOLON_MODEL_TMPDIR';

export type HarnessOptions = Omit<RuntimeOptions, 'dataDir' | 'store' | 'runner' | 'inspect' | 'faults'>;

type FaultableEffect = keyof NonNullable<RuntimeOptions['faults']>;

/**
 * The runtime's `faults` option, armed by the path: each armed fault makes the next run of its
 * effect fail, once; an effect with none armed runs as usual.
 */
export class FaultPlan {
  private readonly armed = new Map<FaultableEffect, EffectFault[]>();

  readonly hooks: NonNullable<RuntimeOptions['faults']> = {
    initialize: () => this.take('initialize'),
    sleep: () => this.take('sleep'),
    evolve: () => this.take('evolve'),
    recover: () => this.take('recover'),
  };

  arm(effect: FaultableEffect, fault: EffectFault): void {
    this.armed.set(effect, [...(this.armed.get(effect) ?? []), fault]);
  }

  /** Faults armed and not used yet. */
  pending(): number {
    return [...this.armed.values()].reduce((n, faults) => n + faults.length, 0);
  }

  private take(effect: FaultableEffect): EffectFault | null {
    return this.armed.get(effect)?.shift() ?? null;
  }
}

/**
 * The distinct state values each actor went through, and the events it received, from the
 * runtime's `inspect` option, keyed by actor id (an agent's id, `continuation`, a task id). A
 * restored actor repeats its value, which is not a change. Values of operations that were rolled
 * back are in here too.
 */
export class ActorLog {
  private readonly values = new Map<string, unknown[]>();
  private readonly received = new Map<string, EventObject[]>();

  readonly observe = (event: InspectionEvent): void => {
    // The ref is typed without its id (ActorRefLike); every actor the runtime inspects has one.
    const id = (event.actorRef as { id?: string }).id;
    if (id === undefined) return;
    if (event.type === '@xstate.event') {
      const received = this.received.get(id) ?? [];
      received.push(event.event);
      this.received.set(id, received);
    }
    if (event.type !== '@xstate.snapshot') return;
    const value = (event.snapshot as { value?: unknown }).value;
    if (value === undefined) return;
    const seen = this.values.get(id) ?? [];
    if (!isDeepStrictEqual(seen.at(-1), value)) seen.push(value);
    this.values.set(id, seen);
  };

  of(actorId: string): unknown[] {
    return [...(this.values.get(actorId) ?? [])];
  }

  /** Every event the actor received, in order (also those of operations rolled back). */
  eventsOf(actorId: string): EventObject[] {
    return [...(this.received.get(actorId) ?? [])];
  }
}

/**
 * A real runtime on a fresh temp data dir: lowdb behind the {@link GateStore}, turns through the
 * {@link ControlledRunner}, effect failures from the {@link FaultPlan}. `reopen` restarts it on the
 * same directory, optionally after editing an agent's document on disk (how a corrupted or old
 * snapshot gets there).
 */
export class Harness {
  private constructor(
    readonly dir: string,
    readonly gate: GateStore,
    readonly runner: ControlledRunner,
    readonly actors: ActorLog,
    readonly faults: FaultPlan,
    public runtime: Runtime,
    private readonly options: HarnessOptions,
  ) {}

  static async open(options: HarnessOptions = {}, dir?: string): Promise<Harness> {
    const dataDir = dir ?? (await mkdtemp(join(process.env[TMPDIR_VARIABLE] ?? tmpdir(), 'holon-model-')));
    const gate = new GateStore(dataDir);
    const runner = new ControlledRunner();
    const actors = new ActorLog();
    const faults = new FaultPlan();
    const runtime = await Runtime.open({ ...options, store: gate, runner, inspect: actors.observe, faults: faults.hooks });
    return new Harness(dataDir, gate, runner, actors, faults, runtime, options);
  }

  async reopen(edit?: { agentId: string; change: (file: StoredDocFile) => void }): Promise<void> {
    this.runner.finishAll();
    await this.runtime.close();
    if (edit) {
      const path = join(this.dir, 'agents', edit.agentId, 'doc.json');
      const file = JSON.parse(await readFile(path, 'utf8')) as StoredDocFile;
      edit.change(file);
      await writeFile(path, JSON.stringify(file));
    }
    this.runtime = await Runtime.open({ ...this.options, store: this.gate, runner: this.runner, inspect: this.actors.observe, faults: this.faults.hooks });
  }

  /**
   * Waits until every operation already queued for `agentId` is done (an operation of its own goes
   * through the agent's lane after them). A scheduler step the runtime started on its own may be
   * about to commit; opening the gate for the path's next change must not let that one through.
   * The caller must make its next API call without yielding to the event loop in between, so that
   * call is queued before the scheduler step this one triggers.
   */
  async barrier(agentId: string): Promise<void> {
    await this.runtime.takeSnapshot(agentId).catch(() => undefined);
  }

  /** A directory for one command's control files (see {@link controlledCommand}). */
  async controlDir(name: string): Promise<string> {
    const path = join(this.dir, 'control', name);
    await mkdir(path, { recursive: true });
    this.controls.push(path);
    return path;
  }

  private readonly controls: string[] = [];

  async dispose(): Promise<void> {
    // Let every controlled command end by itself, also those that ignore SIGTERM.
    await Promise.all(this.controls.map((dir) => releaseCommand(dir, 0)));
    this.runner.finishAll();
    await this.runtime.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A shell command that runs until `releaseCommand(dir, code)` and then exits with `code`; with
 * `ignoreTerm` it survives SIGTERM (only SIGKILL or the release ends it). It writes `started` once
 * its trap is set (see {@link commandStarted}), and gives up after a minute, so nothing outlives a
 * crashed test run for long.
 */
export function controlledCommand(dir: string, options: { ignoreTerm?: boolean } = {}): string {
  const exit = JSON.stringify(join(dir, 'exit'));
  const started = JSON.stringify(join(dir, 'started'));
  const loop = `: > ${started}; i=0; while [ ! -e ${exit} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit "$(cat ${exit} 2>/dev/null || echo 9)"`;
  return options.ignoreTerm ? `trap '' TERM; ${loop}` : loop;
}

/** Whether the command of `dir` is past its start (and its SIGTERM trap, if any). */
export async function commandStarted(dir: string): Promise<boolean> {
  return access(join(dir, 'started')).then(
    () => true,
    () => false,
  );
}

/** The exit code file appears whole (rename), so the command never reads it half-written. */
export async function releaseCommand(dir: string, code: number): Promise<void> {
  await writeFile(join(dir, 'exit.tmp'), String(code));
  await rename(join(dir, 'exit.tmp'), join(dir, 'exit'));
}

/** Polls `probe` until it returns something other than `undefined`/`false`; the last error explains a timeout. */
export async function eventually<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 8_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}
