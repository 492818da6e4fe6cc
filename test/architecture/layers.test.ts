import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The one-way import order of src/ and machines/ (src/runtime/README.md explains it). Each group
 * names the groups it may import; a file's group is the first pattern that matches its path.
 * Anything else — an upward import, or a cycle between any two files — fails.
 */
const GROUPS: ReadonlyArray<{ group: string; path: RegExp; imports: readonly string[] }> = [
  { group: 'machines', path: /^machines\//, imports: ['domain'] },
  { group: 'domain', path: /^src\/domain\//, imports: [] },
  { group: 'store', path: /^src\/store\//, imports: ['domain'] },
  { group: 'visualize', path: /^src\/visualize\//, imports: ['machines'] },
  // src/runtime, bottom up: leaf utilities, the agent kernel, records and host resources beside
  // each other, the flows over them, and the facade.
  { group: 'runtime/process', path: /^src\/runtime\/process\//, imports: ['domain'] },
  { group: 'runtime/runners', path: /^src\/runtime\/runners\//, imports: ['domain'] },
  { group: 'runtime/agent', path: /^src\/runtime\/agent\//, imports: ['runtime/leaf', 'domain', 'machines', 'store', 'visualize'] },
  { group: 'runtime/records', path: /^src\/runtime\/records\//, imports: ['runtime/agent', 'runtime/leaf', 'runtime/process', 'domain', 'machines'] },
  { group: 'runtime/host', path: /^src\/runtime\/host\//, imports: ['runtime/agent', 'runtime/leaf', 'runtime/process', 'domain', 'machines', 'store'] },
  { group: 'runtime/flows', path: /^src\/runtime\/flows\//, imports: ['runtime/records', 'runtime/host', 'runtime/agent', 'runtime/options', 'runtime/runners', 'runtime/leaf', 'runtime/process', 'domain', 'machines', 'store'] },
  { group: 'runtime/options', path: /^src\/runtime\/options\.ts$/, imports: ['runtime/leaf', 'runtime/runners', 'store'] },
  { group: 'runtime/facade', path: /^src\/runtime\/(runtime|example)\.ts$/, imports: ['runtime/flows', 'runtime/records', 'runtime/host', 'runtime/agent', 'runtime/options', 'runtime/runners', 'runtime/leaf', 'domain', 'machines', 'store'] },
  { group: 'runtime/leaf', path: /^src\/runtime\/[^/]+\.ts$/, imports: ['domain'] },
  { group: 'http', path: /^src\/http\//, imports: ['runtime/leaf', 'domain', 'machines', 'visualize'] },
  { group: 'cli-support', path: /^src\/cli\//, imports: ['domain', 'store'] },
  { group: 'replay', path: /^src\/replay\//, imports: ['runtime/agent', 'runtime/records', 'cli-support', 'domain', 'machines', 'store'] },
  { group: 'cli', path: /^src\/cli\.ts$/, imports: ['http', 'replay', 'cli-support', 'runtime/facade', 'store', 'domain'] },
];

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The files `file` imports (relative specifiers, `import type` included), as paths from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] as string);
  return specifiers.map((spec) => relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, '.ts'));
}

function groupOf(file: string): string | null {
  return GROUPS.find((g) => g.path.test(file))?.group ?? null;
}

// The inspector page is a browser bundle with its own tsconfig: it imports only domain types.
const files = [...sources('src'), ...sources('machines')].filter((f) => !f.startsWith('src/http/inspector/page/'));
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => files.includes(target))]));

describe('import layers', () => {
  it('every file of src/ and machines/ belongs to a group', () => {
    expect(files.filter((file) => groupOf(file) === null)).toEqual([]);
  });

  it('no file imports a group its own group may not import', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = groupOf(file) as string;
      const allowed = GROUPS.find((g) => g.group === from)?.imports ?? [];
      for (const target of targets) {
        const to = groupOf(target) as string;
        if (to !== from && !allowed.includes(to)) upward.push(`${file} (${from}) → ${target} (${to})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('no import cycle between files', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]): void => {
      state.set(file, 'open');
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' → '));
        else if (!state.has(target)) visit(target, [...path, target]);
      }
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file, [file]);
    expect(cycles).toEqual([]);
  });
});
