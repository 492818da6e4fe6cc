import { defineConfig } from 'vitest/config';

export const config = defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // The JSON report is what .ci/run reads its pass/fail totals from.
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});

// vitest loads its config through a default export.
export default config;
