import type { EventObject } from 'xstate';
import type { MachineName } from '../../../machines/index.js';
import type { CoverageRecorder } from '../coverage.js';
import { activeStateIds, type ModelPath } from '../paths.js';

/** Step index `-1` is the path's `xstate.init`; `0..n-1` index `path.steps`. */
export const INIT = -1;

/**
 * How one machine's model events are produced and observed in the runtime. A path runs in chunks:
 * a step that needs an API call, followed by the steps the runtime then takes by itself.
 */
export interface Driver<C> {
  readonly machine: MachineName;
  /** Whether the runtime takes step `index` on its own once the steps before it happened. */
  automatic(path: ModelPath, index: number): boolean;
  setup(path: ModelPath): Promise<C>;
  /** Prepares the runtime for the chunk (holds, expectations) and makes the API call(s) of its first step. */
  run(ctx: C, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void>;
  /** Waits until the runtime took the chunk's steps and checks them, step by step, against the model. */
  verify(ctx: C, path: ModelPath, chunk: readonly number[], last: boolean): Promise<void>;
  /** Optional postcondition once the last step is verified: the runtime still serves requests. */
  settled?(ctx: C): Promise<void>;
  dispose(ctx: C): Promise<void>;
}

export function eventAt(path: ModelPath, index: number): EventObject {
  return index === INIT ? { type: 'xstate.init' } : (path.steps[index] as { event: EventObject }).event;
}

export function chunksOf<C>(driver: Driver<C>, path: ModelPath): number[][] {
  const chunks: number[][] = [[INIT]];
  path.steps.forEach((_, index) => {
    const current = chunks.at(-1) as number[];
    if (driver.automatic(path, index)) current.push(index);
    else chunks.push([index]);
  });
  return chunks;
}

function describeStep(path: ModelPath, index: number): string {
  if (index === INIT) return `xstate.init ⇒ ${JSON.stringify(path.initial.value)}`;
  const step = path.steps[index];
  return step ? `step ${index + 1} ${step.event.type}: ${JSON.stringify(step.before.value)} ⇒ ${JSON.stringify(step.after.value)}` : `step ${index + 1}`;
}

/**
 * Runs one generated path against the runtime. Coverage counts a step only once the runtime was
 * seen to take it; a path the runtime cannot follow throws (a failing test, never a skip).
 */
export async function executePath<C>(driver: Driver<C>, path: ModelPath, recorder: CoverageRecorder, onProgress?: () => void): Promise<void> {
  recorder.paths += 1;
  try {
    await runPath(driver, path, recorder, onProgress);
    recorder.passed += 1;
  } catch (error) {
    recorder.failed.push(path.name);
    throw error;
  }
}

async function runPath<C>(driver: Driver<C>, path: ModelPath, recorder: CoverageRecorder, onProgress?: () => void): Promise<void> {
  const ctx = await driver.setup(path);
  const chunks = chunksOf(driver, path);
  try {
    for (const [n, chunk] of chunks.entries()) {
      const last = n === chunks.length - 1;
      const first = chunk[0] as number;
      try {
        await driver.run(ctx, path, chunk, last);
        await driver.verify(ctx, path, chunk, last);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(`${driver.machine} path "${path.name}" failed in the chunk starting at ${describeStep(path, first)}:\n${message}`, { cause: error });
      }
      for (const index of chunk) {
        if (index === INIT) {
          recorder.visit(activeStateIds(path.initial.machine.id, path.initial.value));
          continue;
        }
        const step = path.steps[index];
        if (!step) continue;
        recorder.take(step.fired);
        recorder.visit(activeStateIds(step.after.machine.id, step.after.value));
      }
      onProgress?.();
    }
    await driver.settled?.(ctx);
  } finally {
    await driver.dispose(ctx);
  }
}
