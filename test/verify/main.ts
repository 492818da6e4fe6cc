import { parseArgs } from 'node:util';
import { livenessReport } from './liveness/report.js';

/**
 * `npm run verify [-- --deep]`: the liveness proofs over every machine. Exits 1 when a property
 * is violated, after printing its counterexamples.
 */
async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { deep: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log('usage: npm run verify [-- --deep]\n\n  liveness of every machine (xstate/graph)');
    return 0;
  }
  console.log('== liveness (xstate/graph over the model tests\' events) ==\n');
  const liveness = livenessReport();
  console.log(liveness.text);
  return liveness.ok ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 2;
  },
);
