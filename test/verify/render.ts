import type { EventObject } from 'xstate';

/**
 * How `npm run verify` shows its results: tables, and counterexamples as an event sequence plus a
 * Mermaid `stateDiagram-v2` of the path (paste it into any Mermaid renderer, or GitHub).
 */

/** One step of a counterexample: the event taken and the state it led to (both as labels). */
export interface PathStep {
  event: string;
  state: string;
}

export interface Counterexample {
  /** What the path shows, in one line (e.g. `no rest state is reachable from stopped`). */
  summary: string;
  initial: string;
  steps: PathStep[];
  /** The state the path ends in, and why that state is the violation. */
  note: string;
}

/** An event as one short line: its type, and its payload with long values shortened. */
export function eventLabel(event: EventObject): string {
  const { type, ...payload } = event as EventObject & Record<string, unknown>;
  if (Object.keys(payload).length === 0) return type;
  const text = JSON.stringify(payload, (_key, value: unknown) => {
    if (typeof value === 'string' && value.length > 40) return `${value.slice(0, 37)}...`;
    return value;
  });
  return `${type} ${text.length > 160 ? `${text.slice(0, 157)}...` : text}`;
}

/** `xstate.init → INITIALIZE → INITIALIZE.DONE` */
export function eventSequence(steps: readonly PathStep[]): string {
  return ['xstate.init', ...steps.map((s) => s.event)].join(' → ');
}

function escapeMermaid(text: string): string {
  return text.replace(/"/g, "'").replace(/[:;{}]/g, ' ').replace(/\s+/g, ' ').trim();
}

/** The path as a Mermaid state diagram: one node per step (a state may repeat), edges labelled by event type. */
export function mermaidPath(path: Counterexample): string {
  const lines = ['stateDiagram-v2', '  direction LR'];
  const states = [path.initial, ...path.steps.map((s) => s.state)];
  states.forEach((state, i) => lines.push(`  state "${escapeMermaid(state)}" as s${i}`));
  lines.push('  [*] --> s0');
  path.steps.forEach((step, i) => lines.push(`  s${i} --> s${i + 1} : ${escapeMermaid(step.event.split(' ')[0] ?? step.event)}`));
  lines.push(`  note right of s${states.length - 1} : ${escapeMermaid(path.note)}`);
  return lines.join('\n');
}

export function formatCounterexample(path: Counterexample): string {
  return [
    `counterexample: ${path.summary}`,
    `  events: ${eventSequence(path.steps)}`,
    ...path.steps.map((s, i) => `    ${String(i + 1).padStart(2)}. ${s.event}  ⇒  ${s.state}`),
    `  ${path.note}`,
    '',
    '```mermaid',
    mermaidPath(path),
    '```',
  ].join('\n');
}

/** A plain-text table with a header row and aligned columns. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
