import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { z } from 'zod';
import { diagramEdges, diagramNames, eventLabel } from '../../visualize/diagram.js';
import { stateNodes } from '../../visualize/graph-walk.js';
import { guardName } from '../../visualize/names.js';

/**
 * A machine as the inspector draws it: the state-machine-cat SVG that `npm run visualize`
 * generates from the definition into `visualizations/` (kept current by CI), and the map from
 * the machine's state paths and transitions to the SVG's node, cluster and edge titles, so the
 * page can light the current state and mark the last transition without laying anything out.
 */
export const InspectorChart = z.object({
  name: z.string(),
  svg: z.string(),
  /** State path (dotted, `''` for the root) → the diagram name that titles its SVG node or cluster. */
  states: z.record(z.string(), z.string()),
  edges: z.array(
    z.object({
      /** Diagram names of the two ends (the SVG edge is titled `source->target`). */
      source: z.string(),
      target: z.string(),
      event: z.string(),
      guard: z.string().nullable(),
      /** The edge's text on the drawing (`EVENT [guard]`). */
      label: z.string(),
    }),
  ),
});
export type InspectorChart = z.infer<typeof InspectorChart>;

export async function loadChart(name: string, machine: AnyStateMachine, visualizationsDir: string): Promise<InspectorChart> {
  const svg = await readFile(join(visualizationsDir, `${name}.svg`), 'utf8');
  const names = diagramNames(machine);
  const states: Record<string, string> = {};
  for (const node of stateNodes(machine)) states[node.path.join('.')] = names.get(node.id) ?? node.key;
  const edges = diagramEdges(machine, names).map((edge) => ({
    source: edge.source,
    target: edge.target,
    event: eventLabel(edge.branch),
    guard: edge.branch.guard ? guardName(edge.branch.guard) : null,
    label: edge.label,
  }));
  // The prologue (XML declaration, DOCTYPE, comments) is not needed to inline the drawing.
  return { name, svg: svg.slice(Math.max(0, svg.indexOf('<svg'))), states, edges };
}
