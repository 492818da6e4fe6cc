import { setFlagsFromString } from 'node:v8';

/**
 * Default growth of V8's old generation over the live heap, in percent, for a process that holds
 * many mostly idle agents. 50 held less still, but its more frequent full collections stalled
 * bursts of durable prompts (bench/BENCHMARKS.md).
 */
export const HEAP_GROWING_PERCENT = 100;

/**
 * Lets V8's old generation grow to `1 + percent / 100` times the live heap between full
 * collections (V8's own factor is up to 4×, so a burst of work leaves the process holding several
 * times its live data until it idles). The runtime's live heap is mostly sleeping agents' small
 * records; what a burst allocates dies young or soon after. `holon-xstate serve` calls it at
 * start; an embedder calls it once, before creating the runtime, or passes
 * `--heap-growing-percent` to node. Process-wide: it changes every later collection.
 *
 * Measured (`npm run bench:scale` at 100,000 agents): right after creating them the process held
 * 852-1,095 MiB without it, 579 with 100, at the same creation rate.
 *
 * @example limitHeapGrowth(); // before Runtime.open
 */
export function limitHeapGrowth(percent: number = HEAP_GROWING_PERCENT): void {
  if (!Number.isInteger(percent) || percent < 1) throw new RangeError(`heap growth must be a positive integer percent, got ${percent}`);
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
