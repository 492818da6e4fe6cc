import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyStateMachine } from 'xstate';
import { machines } from '../../machines/index.js';
import { readCoverage, type CoverageReport } from './coverage.js';
import { toIndexPage } from './index-page.js';
import { toDefinitionJson } from './json.js';
import { toMermaid } from './mermaid.js';
import { toScxml, toSvg } from './smcat.js';
import { toStatelySource } from './stately.js';

/**
 * `npm run visualize [outDir]`: every machine of the registry in every export format, plus the
 * README index. Deterministic (registry order, no timestamps), so regenerating an unchanged
 * machine leaves no diff.
 */
// Relative to the working directory (npm runs scripts from the project root), not to this file,
// which moves to dist/ when built.
export const DEFAULT_OUT_DIR = resolve('visualizations');

export interface GeneratedFile {
  name: string;
  content: string;
}

export type MachineRegistry = Readonly<Record<string, AnyStateMachine>>;

export async function machineFiles(name: string, machine: AnyStateMachine): Promise<GeneratedFile[]> {
  return [
    { name: `${name}.mmd`, content: toMermaid(machine) },
    { name: `${name}.svg`, content: await toSvg(machine) },
    { name: `${name}.scxml`, content: await toScxml(machine) },
    { name: `${name}.stately.ts`, content: toStatelySource(machine) },
    { name: `${name}.json`, content: toDefinitionJson(machine) },
  ];
}

export async function renderVisualizations(registry: MachineRegistry, coverage: CoverageReport | null): Promise<GeneratedFile[]> {
  const entries = Object.entries(registry).map(([name, machine]) => ({ name, machine }));
  const files: GeneratedFile[] = [];
  for (const { name, machine } of entries) files.push(...(await machineFiles(name, machine)));
  files.push({ name: 'README.md', content: toIndexPage(entries, coverage) });
  return files;
}

/** Writes every file into `outDir` (coverage is read from there too); returns the paths written. */
export async function generate(outDir: string = DEFAULT_OUT_DIR, registry: MachineRegistry = machines): Promise<string[]> {
  const files = await renderVisualizations(registry, await readCoverage(outDir));
  await mkdir(outDir, { recursive: true });
  const written: string[] = [];
  for (const file of files) {
    const path = join(outDir, file.name);
    await writeFile(path, file.content);
    written.push(path);
  }
  return written;
}

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const [outDir, ...rest] = argv;
  if (rest.length > 0) throw new Error('usage: npm run visualize [-- <outDir>]');
  const written = await generate(outDir === undefined ? DEFAULT_OUT_DIR : resolve(outDir));
  for (const path of written) process.stdout.write(`wrote ${relative(process.cwd(), path)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
