import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, not, setup, type AnyStateMachine } from 'xstate';
import { machines } from '../../machines/index.js';
import { machineStates, machineTransitions, type MachineTransition } from '../../src/visualize/graph-walk.js';
import { machineDefinition } from '../../src/visualize/json.js';
import { toStatelySource } from '../../src/visualize/stately.js';

/**
 * The Stately export must be the same machine: written to a directory of its own (with only
 * `xstate` resolvable), type-checked on its own, imported, and compared with the source machine.
 */
const projectRoot = resolve(import.meta.dirname, '../..');

// Exercises what the project's machines do not use yet: duplicate keys, a custom id, higher-order
// guards, eventless and delayed transitions, onDone, action params.
const sample = setup({
  guards: { ready: () => true, open: () => false, armed: () => false },
  actions: { note: () => {} },
  delays: { soon: 100 },
}).createMachine({
  id: 'sample',
  initial: 'off',
  states: {
    off: { on: { GO: { target: 'on', guard: and(['ready', not('open')]) }, JUMP: '#deep-end' } },
    on: {
      type: 'parallel',
      onDone: 'done',
      states: {
        left: { initial: 'idle', states: { idle: { on: { NEXT: 'end' } }, end: { type: 'final' } } },
        right: {
          initial: 'idle',
          states: {
            idle: { always: { guard: 'armed', target: 'end' }, after: { soon: 'end', 500: { target: 'end', actions: 'note' } } },
            end: { id: 'deep-end', type: 'final' },
          },
        },
      },
    },
    done: { type: 'final', entry: { type: 'note', params: { text: "it's done" } } },
  },
});

const cases: Record<string, AnyStateMachine> = { ...machines, sample };

let dir = '';
const loaded = new Map<string, AnyStateMachine>();

function isMachine(value: unknown): value is AnyStateMachine {
  return typeof value === 'object' && value !== null && 'root' in value && 'toJSON' in value;
}

function tuple(t: MachineTransition): string {
  return JSON.stringify([t.source, t.event, t.target, t.guard]);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'holon-stately-'));
  await symlink(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  await mkdir(join(dir, 'out'));
  for (const [name, machine] of Object.entries(cases)) {
    const file = join(dir, 'out', `${name}.stately.ts`);
    await writeFile(file, toStatelySource(machine));
    const module: Record<string, unknown> = await import(pathToFileURL(file).href);
    const exported = module.machine;
    if (!isMachine(exported)) throw new Error(`${name}.stately.ts does not export a machine`);
    loaded.set(name, exported);
  }
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function reloaded(name: string): AnyStateMachine {
  const machine = loaded.get(name);
  if (!machine) throw new Error(`${name} was not loaded`);
  return machine;
}

describe('<name>.stately.ts round trip', () => {
  it.each(Object.keys(cases))('%s has the same state ids', (name) => {
    const source = cases[name]!;
    expect(machineStates(reloaded(name))).toEqual(machineStates(source));
  });

  it.each(Object.keys(cases))('%s has the same (source, event, target, guard) transitions', (name) => {
    const source = cases[name]!;
    const expected = machineTransitions(source);
    expect(expected.length).toBeGreaterThan(0);
    expect(new Set(machineTransitions(reloaded(name)).map(tuple))).toEqual(new Set(expected.map(tuple)));
    // Branch order decides which guarded alternative wins, so it must survive too.
    expect(machineTransitions(reloaded(name))).toEqual(expected);
  });

  it.each(Object.keys(cases))('%s has the same XState definition (entry actions, meta, types, reenter)', (name) => {
    expect(machineDefinition(reloaded(name))).toEqual(machineDefinition(cases[name]!));
  });

  it('spells out guard names, including the operands of higher-order guards', () => {
    expect(machineTransitions(sample)).toContainEqual({ source: 'sample.off', event: 'GO', target: 'sample.on', guard: 'and(ready, not(open))', branch: 0 });
    expect(machineTransitions(sample)).toContainEqual({ source: 'sample.on.right.idle', event: '', target: 'deep-end', guard: 'armed', branch: 0 });
    const source = toStatelySource(sample);
    expect(source).toMatch(/^import \{ and, createMachine, not \} from 'xstate';$/m);
    expect(source).toContain("guard: and(['ready', not('open')])");
  });

  it('type-checks every exported file on its own under strict settings', () => {
    const files = Object.keys(cases).map((name) => join(dir, 'out', `${name}.stately.ts`));
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      types: [],
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(problems).toEqual([]);
  }, 120_000);

  it('imports nothing but xstate', () => {
    for (const name of Object.keys(machines)) {
      const imports = [...toStatelySource(cases[name]!).matchAll(/from '([^']+)'/g)].map((match) => match[1]);
      expect(imports).toEqual(['xstate']);
    }
  });
});
