import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeMachine } from './lib/machine.js';

/**
 * `npm run bench`: every benchmark in its own process (one's heap and handles do not skew the
 * next), one after the other. Exits non-zero only if a benchmark crashed.
 */

const BENCHMARKS = ['events', 'fsync', 'http', 'scale', 'log', 'tasks'] as const;
const here = dirname(fileURLToPath(import.meta.url));

console.log(`npm run bench on ${describeMachine()}`);
const started = performance.now();
const crashed: string[] = [];
for (const name of BENCHMARKS) {
  const t = performance.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(here, `${name}.ts`)], { stdio: 'inherit' });
  if (result.status !== 0) crashed.push(`${name} (exit ${result.status ?? result.signal})`);
  console.log(`bench:${name} took ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
}
console.log(`all benchmarks: ${((performance.now() - started) / 1000).toFixed(1)} s${crashed.length ? `; crashed: ${crashed.join(', ')}` : ''}`);
process.exitCode = crashed.length > 0 ? 1 : 0;
