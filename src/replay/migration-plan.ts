import { createActor, type AnyStateMachine, type StateValue } from 'xstate';
import { SNAPSHOT_SCHEMA_VERSION } from '../domain/index.js';
import { parseDoc } from '../runtime/agent/agent-cell.js';
import { statePath } from '../runtime/agent/tx.js';
import type { AgentDoc } from '../runtime/agent/agent-doc.js';
import { migrateSnapshot, verifySnapshot } from '../runtime/records/snapshots.js';
import type { MachineSet } from './machines-module.js';

/**
 * `holon-xstate migrate --dry-run`: which agents the machines (and this build's snapshot schema)
 * would not take as they are persisted, and what `holon-xstate migrate` would do for each. Reads
 * only; nothing is written.
 */
export interface MigrationFinding {
  agent_id: string;
  problems: string[];
  /** What `migrate` would do about them (the same functions it runs, here without writing). */
  plan: string[];
}

interface PersistedSnapshot {
  value?: StateValue;
  context?: Record<string, unknown>;
  children?: Record<string, { src?: unknown; snapshot?: PersistedSnapshot }>;
}

function hasState(machine: AnyStateMachine, value: StateValue, context: Record<string, unknown> = {}): boolean {
  try {
    machine.resolveState({ value, context: context as never });
    return true;
  } catch {
    return false;
  }
}

/** What the runtime's restore would do (createActor from the persisted snapshot): its error, if any. */
function restoreError(machine: AnyStateMachine, persisted: unknown, agentId: string): string | null {
  let failure: string | null = null;
  try {
    const actor = createActor(machine, { snapshot: persisted as never, input: { agentId } as never });
    actor.subscribe({ error: (error) => (failure ??= error instanceof Error ? error.message : String(error)) });
    actor.start();
    if (actor.getSnapshot().status === 'error') failure ??= 'the restored actor is in error';
    actor.stop();
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
  }
  return failure;
}

function stateProblems(doc: AgentDoc, machines: MachineSet, agentId: string): string[] {
  const persisted = doc.machine as PersistedSnapshot | null;
  if (!persisted?.value) return ['the document holds no machine snapshot'];
  const problems: string[] = [];
  if (!hasState(machines.agent, persisted.value, persisted.context)) problems.push(`its persisted state ${statePath(persisted.value)} is not a state of the agent machine`);
  for (const [id, child] of Object.entries(persisted.children ?? {})) {
    const logic = child.src === 'task' ? machines.task : child.src === 'continuation' ? machines.continuation : null;
    const value = child.snapshot?.value;
    if (logic && value !== undefined && !hasState(logic, value, child.snapshot?.context)) problems.push(`its ${String(child.src)} actor ${id} is in ${statePath(value)}, not a state of the ${String(child.src)} machine`);
  }
  if (problems.length === 0) {
    const error = restoreError(machines.agent, persisted, agentId);
    if (error) problems.push(`its machine snapshot does not restore under these machines: ${error}`);
  }
  return problems;
}

function snapshotFindings(doc: AgentDoc, agentId: string): { problems: string[]; plan: string[] } {
  const latest = doc.snapshots.at(-1);
  if (!latest) return { problems: [], plan: [] };
  const verdict = verifySnapshot(latest, agentId, doc.identity.identity_version);
  if (verdict.ok) return { problems: [], plan: [] };
  let rewritten = 0;
  let corrupted = 0;
  for (const snapshot of doc.snapshots) {
    const next = migrateSnapshot(snapshot);
    if (!next) corrupted += 1;
    else if (next !== snapshot) rewritten += 1;
  }
  const problems =
    verdict.kind === 'incompatible'
      ? [`its latest recovery point has schema_version ${latest.recovery.schema_version}, not ${SNAPSHOT_SCHEMA_VERSION}: a wake is refused (it stays asleep)${doc.refusal ? '; its last wake was refused' : ''}`]
      : [`its latest recovery point is corrupted (${verdict.reason}): a wake goes through Recovering, which builds a fresh one`];
  const plan = [`migrate would rewrite ${rewritten} snapshot(s) at schema_version ${SNAPSHOT_SCHEMA_VERSION} and leave ${corrupted} corrupted one(s) for recovery${doc.refusal ? ', and clear the refusal' : ''}`];
  return { problems, plan };
}

export function planAgent(agentId: string, raw: unknown, machines: MachineSet): MigrationFinding | null {
  let doc: AgentDoc;
  try {
    doc = parseDoc(raw);
  } catch (error) {
    return { agent_id: agentId, problems: [`its document does not parse: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`], plan: ['migrate cannot load it either: restore the document from a backup'] };
  }
  const states = stateProblems(doc, machines, agentId);
  const snapshots = snapshotFindings(doc, agentId);
  const problems = [...states, ...snapshots.problems];
  if (problems.length === 0) return null;
  const plan = [...snapshots.plan];
  if (states.length > 0) {
    plan.push(
      'migrate does not change machine state: under these machines the agent actor cannot be restored, so operations on the agent fail; keep machines that have the state, or move the agent out of it (stop, terminate) before the upgrade',
    );
  }
  return { agent_id: agentId, problems, plan };
}
