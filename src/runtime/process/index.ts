export { ByteRing } from './ring-buffer.js';
export {
  startCommand,
  type CommandEndReason,
  type CommandHandle,
  type CommandOptions,
  type CommandResult,
  type OutputListener,
} from './command-process.js';
export { waitForOutput, type WaitForOutputOptions, type WaitForOutputStatus } from './wait-for-output.js';
export { processAlive, processGroupAlive, signalGroup } from './process-group.js';
