import { setFlagsFromString } from 'node:v8';

/**
 * Lets V8's old generation grow to only `1 + percent / 100` times the live heap between full
 * collections. V8's own factor goes up to 4×, so a burst of work (creating 100,000 agents) leaves
 * the process holding several times its live data until it idles and V8's memory reducer gives the
 * rest back (~30 s). A lower growth bounds that peak and pays in collection time: in
 * `bench/BENCHMARKS.md`, `100` held 579 MiB instead of 852-1,095 after creating 100,000 agents,
 * and cost `bench:fsync` ~20% of its commits/s. Opt-in: `holon-xstate serve --heap-growth <p>`,
 * or an embedder calls it once before `Runtime.open`. Process-wide: it changes every later
 * collection.
 *
 * @example limitHeapGrowth(100); // the heap grows to at most 2x its live data
 */
export function limitHeapGrowth(percent: number): void {
  if (!isHeapGrowthPercent(percent)) throw new RangeError(`heap growth must be a positive integer percent, got ${percent}`);
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/** What `limitHeapGrowth` takes: a whole percent, at least 1. */
export function isHeapGrowthPercent(percent: number): boolean {
  return Number.isInteger(percent) && percent >= 1;
}
