import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MachineInfo } from './machine.js';
import type { Summary } from './stats.js';
import { fmt } from './table.js';

/**
 * Prints the last results of every benchmark (`bench/results/<name>.json`, written by each run)
 * as Markdown tables, for pasting into bench/BENCHMARKS.md:
 *
 *   npx tsx bench/lib/results-md.ts [events fsync ...]
 */

interface StoredMetric extends Summary {
  name: string;
  unit: string;
  target?: string;
  met?: boolean;
}
interface StoredResult {
  name: string;
  machine: MachineInfo;
  seconds: number;
  at: string;
  metrics: StoredMetric[];
  notes: string[];
}

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');
const DEFAULT = ['events', 'fsync', 'http', 'scale', 'log', 'tasks'];
/** Runs at other sizes (e.g. `scale-100000`) follow the benchmark they belong to. */
const extra = existsSync(dir) ? readdirSync(dir).filter((f) => /^[a-z]+-\d+\.json$/.test(f)).map((f) => f.replace(/\.json$/, '')) : [];
const names = process.argv.slice(2);
const order = DEFAULT.flatMap((name) => [name, ...extra.filter((e) => e.startsWith(`${name}-`))]);
for (const name of names.length > 0 ? names : order) {
  const path = join(dir, `${name}.json`);
  if (!existsSync(path)) {
    console.log(`### ${name}\n\n(no results yet: run \`npm run bench:${name}\`)\n`);
    continue;
  }
  const r = JSON.parse(readFileSync(path, 'utf8')) as StoredResult;
  console.log(`### ${name}\n`);
  console.log(`${r.at.slice(0, 16).replace('T', ' ')} UTC, ${r.seconds.toFixed(0)} s, load ${r.machine.load_1m} at start\n`);
  console.log('| metric | median | min | max | runs | unit | target | met |');
  console.log('|---|--:|--:|--:|--:|---|---|---|');
  for (const m of r.metrics) {
    const met = m.met === undefined ? '' : m.met ? 'yes' : '**missed**';
    console.log(`| ${m.name.trim()} | ${fmt(m.median)} | ${fmt(m.min)} | ${fmt(m.max)} | ${m.n} | ${m.unit} | ${m.target ?? ''} | ${met} |`);
  }
  if (r.notes.length > 0) console.log(`\n${r.notes.map((n) => `- ${n}`).join('\n')}`);
  console.log('');
}
