import { formatCounterexample, table } from '../render.js';
import { explore, type ExplorationResult } from './explore.js';
import { FAULT_VARIANTS } from './faults.js';
import { INVARIANTS, type InvariantId } from './invariants.js';
import { createModel, type Bounds } from './model.js';

export interface ModelCheckReport {
  text: string;
  ok: boolean;
  result: ExplorationResult;
}

function boundsLine(bounds: Bounds): string {
  return `${bounds.agents} agents × ${bounds.tasks} task(s) each, 2 runtime instances, fencing tokens ≤ ${bounds.maxToken}, ${bounds.crashes} crash/close, memory versions ≤ ${bounds.memory}, per agent: ${bounds.failures} actor failure(s), ${bounds.corruptions} corrupted and ${bounds.schemaChanges} other-schema recovery point(s)`;
}

/** The seed-002 invariants over every state the bound reaches: a table, the figures, any counterexample. */
export function modelCheckReport(name: string, bounds: Bounds, progress?: (line: string) => void): ModelCheckReport {
  const result = explore(createModel(bounds), progress ? { onLevel: (depth, states, ms) => progress(`  depth ${depth}: ${states.toLocaleString('en')} states, ${(ms / 1000).toFixed(0)} s`) } : {});
  const violated = new Map(result.violations.map((v) => [v.violation.invariant, v]));
  const rows = (Object.keys(INVARIANTS) as unknown as InvariantId[]).map((id) => {
    const found = violated.get(Number(id) as InvariantId);
    return [String(id), INVARIANTS[id], found ? 'VIOLATED' : 'holds'];
  });
  const figures = `${result.states.toLocaleString('en')} states, ${result.transitions.toLocaleString('en')} steps, depth ${result.depth}, ${(result.ms / 1000).toFixed(1)} s${result.truncated ? ' (TRUNCATED: not exhaustive)' : ''}`;
  const text = [
    `${name} bound: ${boundsLine(bounds)}`,
    `explored: ${figures}`,
    table(['#', 'invariant (seed 002)', 'result'], rows),
    ...result.violations.map((v) => formatCounterexample(v.path)),
  ].join('\n\n');
  return { text, ok: result.violations.length === 0 && !result.truncated, result };
}

/** Every fault variant, explored until its first counterexample: the checker must find the one it breaks. */
export function faultReport(bounds: Bounds): { text: string; ok: boolean; caught: number } {
  const rows: string[][] = [];
  let caught = 0;
  for (const variant of FAULT_VARIANTS) {
    const model = createModel({ ...bounds, ...variant.bounds }, variant.faults, variant.machines ?? {});
    const result = explore(model, { until: variant.expect });
    const first = result.violations.find((v) => v.violation.invariant === variant.expect);
    const ok = first?.violation.invariant === variant.expect;
    if (ok) caught += 1;
    rows.push([variant.name, `#${variant.expect}`, first ? `#${first.violation.invariant} in ${first.path.steps.length} steps (${result.states.toLocaleString('en')} states, ${(result.ms / 1000).toFixed(1)} s)` : 'not found', ok ? 'caught' : 'MISSED']);
  }
  return { text: table(['fault injected', 'breaks', 'first counterexample', ''], rows), ok: caught === FAULT_VARIANTS.length, caught };
}
