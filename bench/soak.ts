/**
 * `npm run soak [-- --kills 500 --seed 123 --agents 4]`: the crash loop of
 * test/durability/crash-loop.test.ts, long. Prints the counts (kills, acknowledged operations,
 * checks passed, violations) and the wall time; exits 1 on any violation.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatReport, runCrashLoop } from '../test/durability/fixtures/crash-loop.js';
import { seedFromEnv } from '../test/durability/fixtures/prng.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '500' },
    seed: { type: 'string' },
    agents: { type: 'string', default: '4' },
    keep: { type: 'boolean', default: false },
  },
});

const seed = values.seed !== undefined ? Number(values.seed) : seedFromEnv();
const dataDir = await mkdtemp(join(tmpdir(), 'holon-soak-'));
const outDir = await mkdtemp(join(tmpdir(), 'holon-soak-out-'));
console.log(`soak: seed=${seed} kills=${values.kills} data=${dataDir}`);
const report = await runCrashLoop({
  dataDir,
  outDir,
  kills: Number(values.kills),
  seed,
  maxAgents: Number(values.agents),
  log: (line) => console.log(`  ${line}`),
});
console.log(formatReport(report));
if (!values.keep && report.violations.length === 0) {
  await rm(dataDir, { recursive: true, force: true });
  await rm(outDir, { recursive: true, force: true });
}
process.exitCode = report.violations.length === 0 ? 0 : 1;
