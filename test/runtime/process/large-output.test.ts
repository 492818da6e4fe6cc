import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startCommand } from '../../../src/runtime/process/index.js';

const FIFTY_MB = 52_428_800;
const MAX_RSS_GROWTH = 20 * 1024 * 1024;

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'holon-large-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function collectGarbage(): void {
  const gc: unknown = Reflect.get(globalThis, 'gc');
  if (typeof gc === 'function') gc();
}

it('streams 50 MB of output to the artifact with bounded memory', { timeout: 60_000 }, async () => {
  const artifactPath = join(dir, 'big.log');
  collectGarbage();
  const rssBefore = process.memoryUsage().rss;
  const handle = startCommand({
    cmd: `head -c ${FIFTY_MB} /dev/zero | tr '\\0' 'a'`,
    artifactPath,
    previewBytes: 8000,
  });
  const result = await handle.result;
  collectGarbage();
  const rssGrowth = process.memoryUsage().rss - rssBefore;

  expect(result).toMatchObject({ outcome: 'completed', exit_code: 0, output_bytes: FIFTY_MB });
  expect((await stat(artifactPath)).size).toBe(FIFTY_MB);
  expect(handle.outputBytes).toBe(FIFTY_MB);
  expect(handle.truncated).toBe(true);
  const preview = handle.preview();
  expect(preview.length).toBeLessThanOrEqual(8000);
  expect(preview).toBe('a'.repeat(8000));
  expect(rssGrowth).toBeLessThan(MAX_RSS_GROWTH);
});
