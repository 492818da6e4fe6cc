import type { CommandHandle } from './command-process.js';

export interface WaitForOutputOptions {
  /** Output already seen by the caller; only bytes beyond it count as new. */
  sinceBytes: number;
  /** Upper bound of the wait. */
  timeoutMs: number;
}

export type WaitForOutputStatus = 'output' | 'ended' | 'timeout';

/**
 * The bounded in-turn wait of `TaskOutput(block=true)`: resolves `output` as soon as the command
 * has produced more than `sinceBytes` bytes, `ended` once its result has settled, or `timeout`.
 * New output wins over the end when both are already true.
 */
export function waitForOutput(handle: CommandHandle, options: WaitForOutputOptions): Promise<WaitForOutputStatus> {
  if (handle.outputBytes > options.sinceBytes) return Promise.resolve('output');
  if (handle.ended) return Promise.resolve('ended');
  return new Promise<WaitForOutputStatus>((resolve) => {
    let settled = false;
    const settle = (status: WaitForOutputStatus): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      unsubscribe();
      resolve(status);
    };
    const unsubscribe = handle.onOutput((outputBytes) => {
      if (outputBytes > options.sinceBytes) settle('output');
    });
    void handle.result.then(() => settle('ended'));
    // Unref'd: a pending TaskOutput must not keep the runtime alive on its own.
    const timer = setTimeout(() => settle('timeout'), Math.max(0, options.timeoutMs));
    timer.unref();
  });
}
