import { summarize, type Summary } from './stats.js';

/** A figure measured once per run. */
export interface Metric {
  name: string;
  unit: string;
  samples: number[];
  /** Shown in the "target" column: e.g. `≥ 0.5`. */
  target?: string;
  /** Whether the median meets the target (undefined: nothing to meet, just reported). */
  met?: boolean;
}

export function fmt(value: number): string {
  const abs = Math.abs(value);
  if (abs === 0) return '0';
  if (abs >= 10_000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
}

/** Prints `median  min  max  unit  target  met` per metric, aligned. */
export function printTable(title: string, metrics: Metric[]): void {
  const header = ['metric', 'median', 'min', 'max', 'runs', 'unit', 'target', 'met'];
  const rows = metrics.map((m) => {
    const s: Summary = summarize(m.samples);
    return [m.name, fmt(s.median), fmt(s.min), fmt(s.max), String(s.n), m.unit, m.target ?? '', m.met === undefined ? '' : m.met ? 'yes' : 'MISSED'];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  console.log(`\n${title}`);
  console.log(pad(header, widths));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(pad(row, widths));
}
