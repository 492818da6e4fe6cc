import type { AnyStateMachine } from 'xstate';
import { machineStates, machineTransitions } from './graph-walk.js';
import { toMermaid } from './mermaid.js';

/** What `/api/machines` and the README show per machine; counts as defined in graph-walk.ts. */
export interface MachineSummary {
  name: string;
  states: number;
  transitions: number;
  mermaid: string;
}

export function machineSummary(name: string, machine: AnyStateMachine): MachineSummary {
  return {
    name,
    states: machineStates(machine).length,
    transitions: machineTransitions(machine).length,
    mermaid: toMermaid(machine),
  };
}
