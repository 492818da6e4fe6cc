import type { MachineName } from '../../../machines/index.js';
import { CoverageRecorder } from '../coverage.js';
import { MODELS } from '../models.js';
import { generatePaths } from '../paths.js';
import { DRIVERS } from './drivers.js';
import { executePath } from './executor.js';

/**
 * Runs one generated path in a process of its own (see isolated.ts): `<machine> <path name>`.
 * Prints the coverage reached so far as one JSON line after every chunk, and the outcome last.
 */
const [machine, name] = process.argv.slice(2) as [MachineName, string];
const path = generatePaths(MODELS[machine]).find((p) => p.name === name);
const recorder = new CoverageRecorder();
const report = (outcome: { done: boolean; error?: string }): void => {
  process.stdout.write(`${JSON.stringify({ ...outcome, states: [...recorder.states], transitions: [...recorder.transitions] })}\n`);
};
try {
  if (!path) throw new Error(`no ${machine} path named ${name}`);
  await executePath(DRIVERS[machine], path, recorder, () => report({ done: false }));
  report({ done: true });
} catch (error) {
  report({ done: true, error: error instanceof Error ? error.message : String(error) });
}
process.exit(0);
