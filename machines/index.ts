import { agentMachine } from './agent.machine.js';
import { continuationMachine } from './continuation.machine.js';
import { supervisorMachine } from './supervisor.machine.js';
import { taskMachine } from './task.machine.js';

export { agentMachine, agentLabels } from './agent.machine.js';
export type * from './agent.machine.js';
export { taskMachine } from './task.machine.js';
export type * from './task.machine.js';
export { continuationMachine } from './continuation.machine.js';
export type * from './continuation.machine.js';
export { supervisorMachine } from './supervisor.machine.js';
export type * from './supervisor.machine.js';
export { hasId, idsOf, type IdSet } from './id-set.js';

/** Every machine of the project, for tooling (visualize, model-based tests, `/api/machines`). */
export const machines = {
  agent: agentMachine,
  task: taskMachine,
  continuation: continuationMachine,
  supervisor: supervisorMachine,
} as const;

export type MachineName = keyof typeof machines;
