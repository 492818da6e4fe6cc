import { formatCounterexample, table } from '../render.js';
import { checkLiveness, type PropertyResult } from './check.js';
import { LIVENESS } from './specs.js';

export interface LivenessReport {
  text: string;
  results: PropertyResult[];
  ok: boolean;
}

/** Every liveness property of every machine: one table per machine, then each counterexample. */
export function livenessReport(): LivenessReport {
  const sections: string[] = [];
  const all: PropertyResult[] = [];
  for (const spec of LIVENESS) {
    const started = performance.now();
    const { graph, results } = checkLiveness(spec);
    const ms = performance.now() - started;
    all.push(...results);
    const rows = results.map((r) => [r.property, r.holds ? 'proven' : `VIOLATED (${r.counterexamples.length})`, r.checked]);
    sections.push(`${spec.name}: ${graph.nodes.size} reachable states, ${graph.events.length} enumerated events, ${ms.toFixed(0)} ms\n${table(['property', 'result', 'checked'], rows)}`);
    for (const r of results) for (const cx of r.counterexamples) sections.push(`${spec.name} / ${r.property}\n${formatCounterexample(cx)}`);
  }
  return { text: sections.join('\n\n'), results: all, ok: all.every((r) => r.holds) };
}
