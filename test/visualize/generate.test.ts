import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { machines } from '../../machines/index.js';
import { DEFAULT_OUT_DIR, generate, main, renderVisualizations } from '../../src/visualize/generate.js';
import { toMermaid } from '../../src/visualize/mermaid.js';
import { machineSummary } from '../../src/visualize/summary.js';

const temps: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'holon-visualize-'));
  temps.push(dir);
  return dir;
}

async function contents(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of (await readdir(dir)).sort()) out.set(name, await readFile(join(dir, name), 'utf8'));
  return out;
}

afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

const EXPECTED_FILES = [
  ...Object.keys(machines).flatMap((name) => ['.mmd', '.svg', '.scxml', '.stately.ts', '.json'].map((suffix) => `${name}${suffix}`)),
  'README.md',
].sort();

describe('generate', () => {
  it('writes every format for every machine, byte-identical on a second run', async () => {
    const first = await tempDir();
    const second = await tempDir();
    await generate(first);
    await generate(second);
    const a = await contents(first);
    expect([...a.keys()]).toEqual(EXPECTED_FILES);
    expect(await contents(second)).toEqual(a);
    await generate(first);
    expect(await contents(first)).toEqual(a);
  });

  it('indexes each machine in the README with its counts and its Mermaid diagram inline', async () => {
    const dir = await tempDir();
    await generate(dir);
    const readme = await readFile(join(dir, 'README.md'), 'utf8');
    for (const [name, machine] of Object.entries(machines)) {
      const summary = machineSummary(name, machine);
      expect(readme).toContain(`## ${name}\n`);
      expect(readme).toContain(`${summary.states} states, ${summary.transitions} transitions`);
      expect(readme).toContain(`\`\`\`mermaid\n${toMermaid(machine)}\`\`\``);
      expect(await readFile(join(dir, `${name}.mmd`), 'utf8')).toBe(summary.mermaid);
    }
    expect(readme).toContain('not yet measured');
  });

  it('reads the coverage table from coverage.json when the model-based tests wrote one', async () => {
    const dir = await tempDir();
    const report = {
      machines: { agent: { states: { covered: 12, total: 13 }, transitions: { covered: 40, total: 45 }, paths: 30 } },
    };
    await writeFile(join(dir, 'coverage.json'), JSON.stringify(report));
    await generate(dir);
    const readme = await readFile(join(dir, 'README.md'), 'utf8');
    expect(readme).toContain('| agent | 12/13 (92%) | 40/45 (88%) | 30 |');
    expect(readme).toContain('| task | not yet measured | not yet measured | — |');
    expect(readme).not.toContain('Coverage: not yet measured');
  });

  it('refuses a coverage.json that does not match the schema', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'coverage.json'), JSON.stringify({ machines: { agent: { states: { covered: 14, total: 13 } } } }));
    await expect(generate(dir)).rejects.toThrow(/CoverageReport/);
  });

  it('takes the output directory as its only argument', async () => {
    const dir = await tempDir();
    await expect(main([dir, 'extra'])).rejects.toThrow(/usage/);
    expect(await readdir(dir)).toEqual([]);
  });

  // The README is left out: it also depends on coverage.json, which the model-based tests rewrite.
  it('matches the committed visualizations/ (run `npm run visualize` after changing a machine)', async () => {
    const committed = await contents(DEFAULT_OUT_DIR);
    for (const file of await renderVisualizations(machines, null)) {
      if (file.name === 'README.md') continue;
      expect(committed.get(file.name), file.name).toBe(file.content);
    }
  });
});
