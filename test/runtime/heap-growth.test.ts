import { describe, expect, it } from 'vitest';
import { limitHeapGrowth } from '../../src/cli/heap-growth.js';

// Its effect is memory, measured by `BENCH_HEAP_GROWTH=100 npm run bench:scale` (bench/BENCHMARKS.md); here, its input.
describe('limitHeapGrowth', () => {
  it('refuses a growth that is not a positive whole percent, naming it', () => {
    for (const bad of [0, -5, 1.5, Number.NaN]) expect(() => limitHeapGrowth(bad)).toThrow(new RangeError(`heap growth must be a positive integer percent, got ${bad}`));
  });
});
