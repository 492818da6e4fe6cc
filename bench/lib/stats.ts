/** Summary statistics of a benchmark's samples (one sample per run). */
export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
}

function sorted(samples: readonly number[]): number[] {
  if (samples.length === 0) throw new Error('no samples');
  return [...samples].sort((a, b) => a - b);
}

/** Nearest-rank percentile, `p` in [0, 100]. */
export function percentile(samples: readonly number[], p: number): number {
  const s = sorted(samples);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))] as number;
}

export function median(samples: readonly number[]): number {
  const s = sorted(samples);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function summarize(samples: readonly number[]): Summary {
  const s = sorted(samples);
  return { median: median(s), min: s[0] as number, max: s[s.length - 1] as number, n: s.length };
}

/** Per-run ratios `measured[i] / baseline[i]`: each run's baseline shares that run's noise. */
export function pairwiseRatios(measured: readonly number[], baseline: readonly number[]): number[] {
  if (measured.length !== baseline.length) throw new Error('ratio needs one baseline per run');
  return measured.map((m, i) => m / (baseline[i] as number));
}
