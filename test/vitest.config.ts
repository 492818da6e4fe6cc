import { defineConfig } from 'vitest/config';

export const config = defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Records where the run's PostgreSQL cluster is; the first suite that needs it starts it.
    globalSetup: ['test/pg/global-setup.ts'],
    // The JSON report is what .ci/run reads its pass/fail totals from.
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});

// vitest loads its config through a default export.
export default config;
