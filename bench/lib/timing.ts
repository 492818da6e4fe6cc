import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export { delay };

/**
 * Nanoseconds of CPU the calling thread has run (`/proc/thread-self/schedstat`, Linux): the time
 * other tenants held the core is left out. It advances in scheduler ticks (4 ms on this kernel),
 * so measure windows of many operations.
 */
export function threadCpuNs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
}

/** Polls `check` every `everyMs` until it is true; fails after `timeoutMs` (loops stay bounded). */
export async function until(check: () => boolean, timeoutMs: number, what: string, everyMs = 2): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** Runs `worker` over `items` with at most `concurrency` in flight. */
export async function pool<T>(items: readonly T[], concurrency: number, worker: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await worker(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
}

/** Samples RSS on a timer so a short peak between two reads is not missed. */
export class RssSampler {
  private peak = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(everyMs = 10) {
    this.peak = process.memoryUsage.rss();
    this.timer = setInterval(() => {
      this.peak = Math.max(this.peak, process.memoryUsage.rss());
    }, everyMs);
  }

  /** Peak RSS seen so far, in bytes. */
  stop(): number {
    clearInterval(this.timer);
    this.peak = Math.max(this.peak, process.memoryUsage.rss());
    return this.peak;
  }
}

export const MiB = 2 ** 20;

let collector: (() => void) | null = null;

/** A full GC before an RSS reading, without needing `--expose-gc` on the command line. */
export function collectGarbage(): void {
  if (collector === null) {
    setFlagsFromString('--expose-gc');
    collector = runInNewContext('gc') as () => void;
  }
  collector();
}
