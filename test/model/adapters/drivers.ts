import type { MachineName } from '../../../machines/index.js';
import { AgentDriver } from './agent.js';
import { ContinuationDriver } from './continuation.js';
import type { Driver } from './executor.js';
import { SupervisorDriver } from './supervisor.js';
import { TaskDriver } from './task.js';

/** The driver of each machine's paths against the runtime API. */
export const DRIVERS: Readonly<Record<MachineName, Driver<unknown>>> = {
  agent: new AgentDriver() as Driver<unknown>,
  task: new TaskDriver() as Driver<unknown>,
  continuation: new ContinuationDriver() as Driver<unknown>,
  supervisor: new SupervisorDriver() as Driver<unknown>,
};
