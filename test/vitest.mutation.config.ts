import { defineConfig } from 'vitest/config';
import { config as base } from './vitest.config.js';

/**
 * The tests Stryker runs against mutants of `machines/`: the machine tests and the contract tests. The other
 * suites (runtime, store, http, durability, model) are slower and do not add to what these pin down.
 * Built by spreading, not `mergeConfig`, which would concatenate `include` with the base one.
 */
export const config = defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/machines/**/*.test.ts', 'test/contracts/**/*.test.ts'],
    // The JSON report at reports/vitest.json belongs to the full suite (.ci/run reads it): do not overwrite it.
    reporters: ['default'],
  },
});

// vitest loads its config through a default export.
export default config;
