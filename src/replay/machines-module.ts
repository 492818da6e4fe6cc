import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyStateMachine } from 'xstate';
import { machines as builtIn } from '../../machines/index.js';

/** The machines a replay or a migration plan checks against: this build's, or another version's module. */
export interface MachineSet {
  /** Where they came from, for reports. */
  source: string;
  agent: AnyStateMachine;
  task: AnyStateMachine | null;
  continuation: AnyStateMachine | null;
}

function isMachine(value: unknown): value is AnyStateMachine {
  return typeof value === 'object' && value !== null && typeof (value as { transition?: unknown }).transition === 'function' && typeof (value as { root?: unknown }).root === 'object';
}

/**
 * `--machines <path>`: a module exporting a `machines` registry like `machines/index.ts`
 * (`{ agent, task, continuation, ... }`), or `agentMachine` (and optionally `taskMachine`,
 * `continuationMachine`). Without a path, the machines this build runs.
 */
export async function loadMachines(path?: string): Promise<MachineSet> {
  if (path === undefined) return { source: 'machines/index.ts (this build)', agent: builtIn.agent, task: builtIn.task, continuation: builtIn.continuation };
  const file = resolve(path);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`cannot load machines from ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const registry = (loaded['machines'] ?? {}) as Record<string, unknown>;
  const pick = (name: string, exported: string): AnyStateMachine | null => {
    const value = registry[name] ?? loaded[exported];
    return isMachine(value) ? value : null;
  };
  const agent = pick('agent', 'agentMachine');
  if (!agent) throw new Error(`${file} exports no agent machine (a \`machines\` registry with \`agent\`, or \`agentMachine\`)`);
  return { source: file, agent, task: pick('task', 'taskMachine'), continuation: pick('continuation', 'continuationMachine') };
}
