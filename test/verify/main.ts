import { parseArgs } from 'node:util';
import { livenessReport } from './liveness/report.js';
import { CI_BOUNDS, DEEP_BOUNDS, type Bounds } from './model-check/model.js';
import { faultReport, modelCheckReport } from './model-check/report.js';

const USAGE = `usage: npm run verify [-- --deep] [-- --bound <name>=<n> ...]

  1. liveness of every machine, proven over its graph (xstate/graph, the model tests' events)
  2. the seed-002 invariants, model-checked over the composed system (CI bound; --deep: the larger one;
     --bound overrides one bound: ${Object.keys(CI_BOUNDS).join(', ')})
  3. the fault-injected variants, each of which the model checker must catch

Exits 1 when a property or invariant is violated (its counterexamples are printed) or a fault is missed.`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: { deep: { type: 'boolean', default: false }, bound: { type: 'string', multiple: true, default: [] }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const bounds: Bounds = { ...(values.deep ? DEEP_BOUNDS : CI_BOUNDS) };
  for (const option of values.bound) {
    const [name, raw] = option.split('=');
    const value = Number(raw);
    if (!name || !(name in bounds) || !Number.isInteger(value) || value < 0 || (name === 'agents' && (value < 1 || value > 2)) || (name === 'tasks' && value > 2)) {
      console.error(`invalid --bound ${option}\n\n${USAGE}`);
      return 2;
    }
    bounds[name as keyof Bounds] = value;
  }
  const boundName = values.bound.length > 0 ? 'custom' : values.deep ? 'deep' : 'CI';
  console.log("== 1. liveness (xstate/graph over the model tests' events) ==\n");
  const liveness = livenessReport();
  console.log(liveness.text);
  console.log(`\n== 2. seed-002 invariants, model-checked (${boundName} bound) ==\n`);
  const invariants = modelCheckReport(boundName, bounds, (line) => process.stderr.write(`${line}\n`));
  console.log(invariants.text);
  console.log('\n== 3. fault injection (CI bound, each explored until its counterexample) ==\n');
  const faults = faultReport(CI_BOUNDS);
  console.log(faults.text);
  return liveness.ok && invariants.ok && faults.ok ? 0 : 1;
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
