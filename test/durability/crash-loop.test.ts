import { afterEach, describe, expect, it } from 'vitest';
import { formatReport, runCrashLoop } from './fixtures/crash-loop.js';
import { TempDirs } from './fixtures/harness.js';
import { seedFromEnv } from './fixtures/prng.js';

/**
 * Issue 4 crash loop (CI size): ≥ 30 SIGKILLs at seeded random moments of a stream of
 * acknowledged operations; after each restart every acknowledged operation is on disk, every file
 * parses, no command ran twice, no agent is Active without a verified snapshot.
 * `npm run soak` runs the same harness with ≥ 500 kills. Reproduce with DURABILITY_SEED=<seed>.
 */

const dirs = new TempDirs();

afterEach(async () => {
  await dirs.cleanup();
});

describe('crash loop', () => {
  it('survives 30+ SIGKILLs with every acknowledged operation durable and no effect repeated', { timeout: 180_000 }, async () => {
    const seed = seedFromEnv();
    const report = await runCrashLoop({ dataDir: await dirs.make(), outDir: await dirs.make('holon-dur-out-'), kills: 30, seed });
    console.log(formatReport(report));
    expect(report.violations).toEqual([]);
    expect(report.kills).toBeGreaterThanOrEqual(30);
    expect(Object.values(report.acknowledged).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
