import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { limitHeapGrowth } from '../../src/cli/heap-growth.js';
import { describeMachine, machineInfo } from './machine.js';
import { summarize } from './stats.js';
import { printTable, type Metric } from './table.js';

/** What a benchmark hands back: its table, plus notes worth keeping next to the figures. */
export interface BenchResult {
  metrics: Metric[];
  notes?: string[];
}

const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

/** `BENCH_HEAP_GROWTH=<p>` runs a benchmark process as `serve --heap-growth <p>` runs (baselines share the process). */
export function applyBenchHeapGrowth(): void {
  const heapGrowth = process.env['BENCH_HEAP_GROWTH'];
  if (heapGrowth !== undefined) limitHeapGrowth(Number(heapGrowth));
}

/**
 * Runs one benchmark: prints the machine, the table and the notes, and writes
 * `bench/results/<name>.json`. A missed target is reported, never an exit code; only a crash
 * (or the watchdog, when the bounded loops somehow overrun `budgetMs`) exits non-zero.
 */
export function runBenchmark(name: string, budgetMs: number, body: () => Promise<BenchResult>): void {
  applyBenchHeapGrowth();
  const machine = machineInfo();
  const started = performance.now();
  console.log(`bench:${name} on ${describeMachine(machine)}`);
  const watchdog = setTimeout(() => {
    console.error(`bench:${name} overran its ${Math.round(budgetMs / 1000)} s budget`);
    process.exit(2);
  }, budgetMs);
  watchdog.unref();
  body()
    .then((result) => {
      const seconds = (performance.now() - started) / 1000;
      printTable(`bench:${name} (${seconds.toFixed(1)} s)`, result.metrics);
      for (const note of result.notes ?? []) console.log(`  - ${note}`);
      mkdirSync(RESULTS_DIR, { recursive: true });
      const metrics = result.metrics.map((m) => ({ ...m, ...summarize(m.samples) }));
      writeFileSync(join(RESULTS_DIR, `${name}.json`), `${JSON.stringify({ name, machine, seconds, at: new Date().toISOString(), metrics, notes: result.notes ?? [] }, null, 2)}\n`);
      clearTimeout(watchdog);
      // Handles left by the system under test (sockets, timers) must not keep a finished benchmark alive.
      process.exit(0);
    })
    .catch((error: unknown) => {
      console.error(`bench:${name} crashed:`, error);
      process.exit(1);
    });
}

/** One benchmark's progress line on stderr, so the table on stdout stays clean. */
export function progress(message: string): void {
  process.stderr.write(`  ${message}\n`);
}
