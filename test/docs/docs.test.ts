import { readFile, readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentSummary, EVENT_PAYLOADS, EventType } from '../../src/domain/index.js';
import { startServer, type TestServer } from '../http/helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string): Promise<string> => readFile(join(ROOT, path), 'utf8');

/** The rows of the first markdown table under `## <heading>` (or of the whole text), as cells. */
function tableRows(markdown: string, heading?: string): string[][] {
  let text = markdown;
  if (heading !== undefined) {
    const start = markdown.indexOf(`\n## ${heading}\n`);
    expect(start, `section "${heading}"`).toBeGreaterThanOrEqual(0);
    const end = markdown.indexOf('\n## ', start + 1);
    text = markdown.slice(start, end < 0 ? undefined : end);
  }
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[-| ]+\|$/.test(line))
    .slice(1) // the header row
    .map((line) => line.slice(1, -1).split('|').map((cell) => cell.trim()));
}

const codeNames = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
const plainNames = (cell: string): string[] => cell.split(',').map((name) => name.trim()).filter((name) => name.length > 0);

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => server?.close());

describe('docs/http-api.md', () => {
  it('lists exactly the operations of the OpenAPI document, with their operationIds', async () => {
    const doc = (await fetch(`${server.base}/openapi.json`).then((r) => r.json())) as { paths: Record<string, Record<string, { operationId: string }>> };
    const served = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`))
      .sort();
    const documented = tableRows(await read('docs/http-api.md'), 'Routes')
      .map(([method = '', path = '', operationId = '']) => `${method} ${path.replaceAll('`', '')} ${operationId}`)
      .sort();
    expect(documented).toEqual(served);
  });

  it('names every event type with the payload fields it always and may have', async () => {
    const rows = tableRows(await read('docs/http-api.md'), 'Events');
    const documented = new Map(rows.map(([type = '', always = '', may = '']) => [type.replaceAll('`', ''), { always: codeNames(always), may: plainNames(may) }]));
    expect([...documented.keys()].sort()).toEqual([...EventType.options].sort());
    for (const type of EventType.options) {
      const shape = (EVENT_PAYLOADS[type] as z.ZodObject).shape as Record<string, z.ZodType>;
      const required = Object.keys(shape).filter((key) => !(shape[key] instanceof z.ZodOptional));
      const optional = Object.keys(shape).filter((key) => shape[key] instanceof z.ZodOptional);
      expect(documented.get(type), type).toEqual({ always: required, may: optional });
    }
  });
});

/** Field paths of a schema down to `depth` levels of objects (arrays and records are leaves). */
function fieldPaths(schema: z.ZodType, depth: number, prefix = ''): string[] {
  let inner: z.ZodType = schema;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) inner = inner.unwrap() as z.ZodType;
  if (!(inner instanceof z.ZodObject) || depth === 0) return [prefix];
  return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, value]) =>
    fieldPaths(value, depth - 1, prefix === '' ? key : `${prefix}.${key}`),
  );
}

describe('docs/agent-summary.md', () => {
  it('has one row for every field of the AgentSummary, and no other', async () => {
    const rows = tableRows(await read('docs/agent-summary.md'));
    const documented = rows.map(([field = '']) => field.replaceAll('`', ''));
    expect(documented.sort()).toEqual(fieldPaths(AgentSummary, 2).sort());
    for (const [field, meaning] of rows) expect((meaning ?? '').length, field).toBeGreaterThan(10);
  });
});

describe('the repository documentation', () => {
  const files = async (): Promise<string[]> => {
    const docs = (await readdir(join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
    return ['README.md', 'src/runtime/README.md', 'src/store/README.md', ...docs];
  };

  it('points at no file a user of the repository does not have (shared/...)', async () => {
    for (const file of await files()) expect(await read(file), file).not.toMatch(/\bshared\/(?:DESIGN|spec|seeds)/);
  });

  it('links only to files that exist', async () => {
    for (const file of await files()) {
      for (const [, target = ''] of (await read(file)).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        await expect(stat(resolve(ROOT, dirname(file), target)), `${file} → ${target}`).resolves.toBeTruthy();
      }
    }
  });
});
