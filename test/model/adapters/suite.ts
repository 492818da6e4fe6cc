import { describe, expect, it } from 'vitest';
import { machines, type MachineName } from '../../../machines/index.js';
import { CoverageRecorder, machineCoverage, writeCoverage } from '../coverage.js';
import { generatePaths, type ModelPath, type ModelSpec } from '../paths.js';
import { executePath, type Driver } from './executor.js';
import { executeIsolated } from './isolated.js';

export interface ModelSuite {
  paths: ModelPath[];
  recorder: CoverageRecorder;
}

/**
 * Per path test, whatever the project's default: a path waits for processes and effect timeouts,
 * and an isolated one for its child's deadline.
 */
export const PATH_TIMEOUT_MS = 60_000;

export interface SuiteOptions {
  /** More path tests (e.g. over HTTP) that count towards the same coverage. */
  extra?: (suite: ModelSuite) => void;
  /** Paths run in a child process (isolated.ts): the runtime is known to hang on them. */
  isolate?: (path: ModelPath) => boolean;
}

/**
 * One test per generated path (run concurrently: each has its own runtime and data dir), then the
 * coverage check, which writes `visualizations/coverage.{json,md}` once every path has run.
 */
export function modelSuite<C>(name: MachineName, spec: ModelSpec, driver: Driver<C>, options: SuiteOptions = {}): ModelSuite {
  const suite: ModelSuite = { paths: generatePaths(spec), recorder: new CoverageRecorder() };
  describe(`${name} machine: generated paths executed against the runtime`, () => {
    it.concurrent.for(suite.paths.map((path) => [path.name, path] as const))('%s', { timeout: PATH_TIMEOUT_MS }, async ([, path]) => {
      if (options.isolate?.(path)) await executeIsolated(name, path, suite.recorder);
      else await executePath(driver, path, suite.recorder);
    });
  });
  options.extra?.(suite);
  describe(`${name} machine: coverage`, () => {
    it('reaches every state and transition that is not allow-listed', async () => {
      const report = machineCoverage(name, machines[name], suite.recorder);
      // A filtered run (`-t`) would write partial numbers: only a full run updates the files.
      if (suite.recorder.paths >= suite.paths.length) await writeCoverage(name, report);
      expect(report.missing).toEqual({ states: [], transitions: [] });
      expect(report.paths_passed).toBe(report.paths);
    });
  });
  return suite;
}
