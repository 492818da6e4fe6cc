import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import type { MachineName } from '../../machines/index.js';
import { machineStates, machineTransitions, type MachineTransition } from '../../src/visualize/graph-walk.js';
import { transitionKey, type AllowListed, type TransitionKey } from './paths.js';

/**
 * Transitions no runtime mechanism can produce, each with its reason. Generated paths never take
 * them (they are filtered out of the graph), and the coverage check excuses them, and the states
 * only they enter. Everything else must be covered by a path executed against the runtime, or the
 * suite fails. Empty: every transition of the four machines is covered.
 */
export const ALLOW_LIST: Readonly<Record<MachineName, readonly AllowListed[]>> = {
  agent: [],
  task: [],
  continuation: [],
  supervisor: [],
};

/** States and transitions reached by the steps of executed paths that the runtime followed. */
export class CoverageRecorder {
  readonly states = new Set<string>();
  readonly transitions = new Set<TransitionKey>();
  paths = 0;
  passed = 0;
  /** Names of the paths the runtime could not follow. */
  readonly failed: string[] = [];

  visit(stateIds: readonly string[]): void {
    for (const id of stateIds) this.states.add(id);
  }

  take(keys: readonly TransitionKey[]): void {
    for (const key of keys) this.transitions.add(key);
  }
}

export interface CoverageCount {
  covered: number;
  total: number;
}

export interface AllowListEntry {
  transition: string;
  guard: string | null;
  reason: string;
}

/** One machine's entry of `visualizations/coverage.json` (a superset of src/visualize/coverage.ts). */
export interface MachineCoverageReport {
  states: CoverageCount;
  transitions: CoverageCount;
  paths: number;
  paths_passed: number;
  /** Paths the runtime could not follow (each one is a failing test); absent in older files. */
  paths_failed?: string[];
  /** Uncovered and not excused: must be empty. */
  missing: { states: string[]; transitions: string[] };
  /** Uncovered but excused by the allow-list (states: only allow-listed transitions enter them). */
  excused: { states: string[]; transitions: string[] };
  allow_list: AllowListEntry[];
}

function label(t: MachineTransition): string {
  return `${t.source} --${t.event}${t.guard ? ` [${t.guard}]` : ''}${t.branch > 0 || t.guard ? ` #${t.branch}` : ''}--> ${t.target ?? '(stays)'}`;
}

/** The states a transition to `targetId` enters: the target, its ancestors, and its initial descendants. */
function enteredBy(machine: AnyStateMachine, targetId: string): Set<string> {
  const out = new Set<string>();
  const down = (node: AnyStateNode): void => {
    out.add(node.id);
    if (node.type === 'parallel') Object.values(node.states).forEach(down);
    else for (const child of node.initial?.target ?? []) down(child);
  };
  const target = machine.getStateNodeById(targetId);
  down(target);
  for (let node = target.parent; node && node !== machine.root; node = node.parent) out.add(node.id);
  return out;
}

/**
 * A state that is not initial and that every transition entering it is allow-listed for cannot
 * be reached through the runtime: it is excused along with those transitions.
 */
function excusedStates(machine: AnyStateMachine, allowed: ReadonlySet<TransitionKey>, uncovered: readonly string[]): string[] {
  const transitions = machineTransitions(machine);
  const initial = enteredBy(machine, machine.root.id);
  return uncovered.filter((state) => {
    if (initial.has(state)) return false;
    const entering = transitions.filter((t) => (t.target ?? '').split(',').some((target) => target !== '' && enteredBy(machine, target).has(state)));
    return entering.length > 0 && entering.every((t) => allowed.has(transitionKey(t)));
  });
}

export function machineCoverage(name: MachineName, machine: AnyStateMachine, recorder: CoverageRecorder, allowList: readonly AllowListed[] = ALLOW_LIST[name]): MachineCoverageReport {
  const allowed = new Set(allowList.map(transitionKey));
  const states = machineStates(machine);
  const transitions = machineTransitions(machine);
  const known = new Set(transitions.map(transitionKey));
  for (const key of allowed) if (!known.has(key)) throw new Error(`allow-list entry ${key} is not a transition of ${name}`);
  const uncoveredStates = states.filter((s) => !recorder.states.has(s)).sort();
  const uncoveredTransitions = transitions.filter((t) => !recorder.transitions.has(transitionKey(t)));
  const excusedS = excusedStates(machine, allowed, uncoveredStates);
  const reasons = new Map(allowList.map((a) => [transitionKey(a), a.reason]));
  return {
    states: { covered: states.length - uncoveredStates.length, total: states.length },
    transitions: { covered: transitions.length - uncoveredTransitions.length, total: transitions.length },
    paths: recorder.paths,
    paths_passed: recorder.passed,
    paths_failed: [...recorder.failed].sort(),
    missing: {
      states: uncoveredStates.filter((s) => !excusedS.includes(s)),
      transitions: uncoveredTransitions.filter((t) => !allowed.has(transitionKey(t))).map(label).sort(),
    },
    excused: {
      states: excusedS,
      transitions: uncoveredTransitions.filter((t) => allowed.has(transitionKey(t))).map(label).sort(),
    },
    allow_list: transitions
      .filter((t) => allowed.has(transitionKey(t)))
      .map((t) => ({ transition: label(t), guard: t.guard, reason: reasons.get(transitionKey(t)) ?? '' }))
      .sort((a, b) => a.transition.localeCompare(b.transition)),
  };
}

export const VISUALIZATIONS_DIR = join(import.meta.dirname, '..', '..', 'visualizations');

type Report = { machines: Record<string, MachineCoverageReport> };

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}

function percent(count: CoverageCount): string {
  return count.total === 0 ? '—' : `${Math.floor((count.covered * 100) / count.total)}%`;
}

export function coverageMarkdown(report: Report): string {
  const names = Object.keys(report.machines).sort();
  const lines = [
    '# Path coverage of the machines against the runtime',
    '',
    'Written by `npx vitest run test/model` (the model-based path tests): do not edit by hand.',
    'Paths are generated from each machine with `xstate/graph` (shipped inside xstate 5.33; not the frozen `@xstate/graph`): shortest paths (agent, continuation) or simple paths (task, supervisor), plus one path per transition they miss and a few directed paths. Every step is executed against a real runtime (lowdb store in a temp dir, real command processes) through its API, and the runtime\'s actor state is compared with the model\'s after each step.',
    'Counts: states without the root; transitions as (source, event, guarded branch), the units of `machines/` walks in `src/visualize/graph-walk.ts`.',
    '',
    'Excused: uncovered but allow-listed below (no runtime mechanism produces the transition), or a state only such transitions enter. Missing: neither covered nor excused; the suite fails while any is left.',
    '',
    '| machine | states covered | transitions covered | excused states / transitions | missing | paths run | paths passed |',
    '|---|---|---|---|---|---|---|',
    ...names.map((n) => {
      const m = report.machines[n] as MachineCoverageReport;
      const missing = m.missing.states.length + m.missing.transitions.length;
      return `| ${n} | ${m.states.covered}/${m.states.total} (${percent(m.states)}) | ${m.transitions.covered}/${m.transitions.total} (${percent(m.transitions)}) | ${m.excused.states.length} / ${m.excused.transitions.length} | ${missing} | ${m.paths} | ${m.paths_passed} |`;
    }),
    '',
  ];
  for (const n of names) {
    const m = report.machines[n] as MachineCoverageReport;
    lines.push(`## ${n}`, '', '| | covered | total | missing | excused by the allow-list |', '|---|---|---|---|---|');
    lines.push(`| states | ${m.states.covered} | ${m.states.total} | ${m.missing.states.length} | ${m.excused.states.length} |`);
    lines.push(`| transitions | ${m.transitions.covered} | ${m.transitions.total} | ${m.missing.transitions.length} | ${m.excused.transitions.length} |`, '');
    if (m.missing.states.length + m.missing.transitions.length > 0) {
      lines.push('Missing (the suite fails until these are covered or allow-listed):', '');
      for (const s of m.missing.states) lines.push(`- state \`${s}\``);
      for (const t of m.missing.transitions) lines.push(`- \`${t}\``);
      lines.push('');
    }
    const failed = m.paths_failed ?? [];
    if (failed.length > 0) {
      lines.push('Paths the runtime could not follow (failing tests):', '');
      for (const p of failed) lines.push(`- ${p}`);
      lines.push('');
    }
    if (m.excused.states.length > 0) lines.push(`Excused states (entered only by allow-listed transitions): ${m.excused.states.map((s) => `\`${s}\``).join(', ')}.`, '');
    if (m.allow_list.length > 0) {
      lines.push('Allow-list:', '', '| transition | reason |', '|---|---|');
      for (const a of m.allow_list) lines.push(`| \`${a.transition}\` | ${a.reason} |`);
      lines.push('');
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** A lock left by a killed worker is old: it is broken after this long. */
const STALE_LOCK_MS = 30_000;

async function withLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const lock = join(dir, '.coverage.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if (attempt > 400) throw error;
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > STALE_LOCK_MS) await rm(lock, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/**
 * Merges one machine's report into `coverage.json` and rewrites `coverage.md` from the merge. The
 * four model test files run in parallel workers, hence the lock; the output has sorted keys and
 * no timestamps or durations, so the same coverage always writes the same bytes.
 */
export async function writeCoverage(name: MachineName, report: MachineCoverageReport, dir = VISUALIZATIONS_DIR): Promise<void> {
  await mkdir(dir, { recursive: true });
  await withLock(dir, async () => {
    const path = join(dir, 'coverage.json');
    let merged: Report = { machines: {} };
    try {
      merged = JSON.parse(await readFile(path, 'utf8')) as Report;
    } catch (error) {
      if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
    }
    merged.machines = { ...merged.machines, [name]: report };
    const sorted = sortKeys(merged) as Report;
    await writeFile(path, `${JSON.stringify(sorted, null, 2)}\n`);
    await writeFile(join(dir, 'coverage.md'), coverageMarkdown(sorted));
  });
}
