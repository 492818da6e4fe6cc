// @ts-check
/**
 * Mutation testing of the pure statecharts and their contracts (`npm run test:mutation`).
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export const config = {
  testRunner: 'vitest',
  vitest: {
    // test/vitest.config.ts with `include` narrowed to test/machines and test/contracts.
    configFile: 'test/vitest.mutation.config.ts',
  },
  mutate: ['machines/**/*.ts'],
  checkers: [],
  coverageAnalysis: 'perTest',
  thresholds: { high: 90, low: 85, break: 85 },
  reporters: ['clear-text', 'json', 'progress'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, logTests: false },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};

export default config;
