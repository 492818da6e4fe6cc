import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * `visualizations/coverage.json`, written by the model-based path tests and read into the README.
 * Counts use the same units as the README (graph-walk.ts): states without the root, transitions
 * as (source, event, branch). Unknown fields are ignored, so the report can grow.
 */
export const CoverageCount = z
  .object({ covered: z.number().int().nonnegative(), total: z.number().int().nonnegative() })
  .refine((count) => count.covered <= count.total, { message: 'covered exceeds total' });
export type CoverageCount = z.infer<typeof CoverageCount>;

export const MachineCoverage = z.object({
  states: CoverageCount,
  transitions: CoverageCount,
  /** How many generated paths were run. */
  paths: z.number().int().nonnegative().optional(),
});
export type MachineCoverage = z.infer<typeof MachineCoverage>;

export const CoverageReport = z.object({ machines: z.record(z.string(), MachineCoverage) });
export type CoverageReport = z.infer<typeof CoverageReport>;

export const COVERAGE_FILE = 'coverage.json';

/** `null` when nothing was measured yet; a file that does not match the schema is an error, not "absent". */
export async function readCoverage(dir: string): Promise<CoverageReport | null> {
  const path = join(dir, COVERAGE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return null;
    throw error;
  }
  const parsed = CoverageReport.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${path} does not match CoverageReport: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
