import type { AnyStateMachine } from 'xstate';
import { machines } from '../../machines/index.js';
import { ActorNode } from '../domain/index.js';
import { machineSummary } from '../visualize/summary.js';
import { HttpError } from './errors.js';
import { AgentParams, apiErrors, MachineDetail, MachineList, MachineParams, NoQuery } from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['statecharts'];

interface MachineView {
  name: string;
  states: number;
  transitions: number;
  definition: unknown;
  mermaid: string;
}

/** Machines are static: each view is computed on first request and kept. */
function machineView(name: string, machine: AnyStateMachine): MachineView {
  const { states, transitions, mermaid } = machineSummary(name, machine);
  // XState's own definition export, reduced to plain JSON (it may hold functions and undefineds).
  return { name, states, transitions, definition: JSON.parse(JSON.stringify(machine.toJSON())) as unknown, mermaid };
}

export function registerMachineRoutes(app: HttpApp, { runtime }: RouteDeps): void {
  const registry: ReadonlyMap<string, AnyStateMachine> = new Map(Object.entries(machines));
  const cache = new Map<string, MachineView>();
  const view = (name: string): MachineView | undefined => {
    const machine = registry.get(name);
    if (!machine) return undefined;
    let cached = cache.get(name);
    if (!cached) {
      cached = machineView(name, machine);
      cache.set(name, cached);
    }
    return cached;
  };

  app.get(
    '/api/machines',
    {
      schema: {
        tags,
        operationId: 'listMachines',
        summary: 'Every machine: name, state and transition counts',
        querystring: NoQuery,
        response: { 200: MachineList, ...apiErrors() },
      },
    },
    async () => ({
      items: [...registry.keys()].map((name) => {
        const { states, transitions } = view(name) as MachineView;
        return { name, states, transitions };
      }),
    }),
  );

  app.get(
    '/api/machines/:name',
    {
      schema: {
        tags,
        operationId: 'getMachine',
        summary: "The machine definition as XState's JSON, plus Mermaid stateDiagram-v2 text",
        params: MachineParams,
        querystring: NoQuery,
        response: { 200: MachineDetail, ...apiErrors(404) },
      },
    },
    async (request) => {
      const found = view(request.params.name);
      if (!found) throw new HttpError(404, 'machine_not_found', 'no machine with that name');
      return found;
    },
  );

  app.get(
    '/api/agents/:id/actors',
    {
      schema: {
        tags,
        operationId: 'getActorTree',
        summary: 'The live actor tree under the supervisor: ids, machine, state value',
        params: AgentParams,
        querystring: NoQuery,
        response: { 200: ActorNode, ...apiErrors(404) },
      },
    },
    async (request) => runtime.actorTree(request.params.id),
  );
}
