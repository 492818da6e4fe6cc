import type { AnyActorRef, AnyMachineSnapshot, AnyStateMachine, AnyStateNode, StateValue } from 'xstate';
import { agentMachine, continuationMachine, taskMachine } from '../../../machines/index.js';
import type { AcceptedEvent, ActorAccepts, AgentAccepts } from '../../domain/index.js';
import { guardName, guardRef } from '../../visualize/names.js';
import type { AgentCell } from './agent-cell.js';

/**
 * The events each of an agent's actors accepts in its current state, read from the machine
 * itself: the transitions its active state nodes declare (deepest first, the order XState tries
 * them), with guard names, and whether `snapshot.can({ type })` takes a bare event of that type
 * now. A passivated agent is read from its last committed snapshot, restored with
 * `machine.resolveState` (value and context), so guards see the same context as a live actor.
 * This is the inspector's own small reading; it sends nothing to any actor.
 */
type MachineName = ActorAccepts['machine'];

const MACHINES: Readonly<Record<MachineName, AnyStateMachine>> = { agent: agentMachine, task: taskMachine, continuation: continuationMachine };

interface PersistedActor {
  status?: string;
  value?: StateValue;
  context?: unknown;
  children?: Record<string, { src?: unknown; snapshot?: PersistedActor } | undefined>;
}

function childMachine(src: unknown, id: string): MachineName {
  if (src === 'continuation' || id === 'continuation') return 'continuation';
  return 'task';
}

function depth(node: AnyStateNode): number {
  return node.path.length;
}

export function acceptedEvents(snapshot: AnyMachineSnapshot): AcceptedEvent[] {
  if (snapshot.status !== 'active') return [];
  const byType = new Map<string, AcceptedEvent>();
  const nodes = [...snapshot._nodes].sort((a, b) => depth(b) - depth(a));
  for (const node of nodes) {
    for (const [type, transitions] of Object.entries(node.on)) {
      if (type.startsWith('xstate.')) continue;
      let entry = byType.get(type);
      if (!entry) {
        let enabled = false;
        try {
          enabled = snapshot.can({ type });
        } catch {
          // A guard that reads a payload field the bare event lacks: not takeable without one.
        }
        entry = { type, enabled, transitions: [] };
        byType.set(type, entry);
      }
      for (const transition of transitions) {
        const guard = guardRef(transition.guard);
        entry.transitions.push({
          source: node.path.join('.'),
          targets: (transition.target ?? []).map((target) => target.path.join('.')),
          guard: guard ? guardName(guard) : null,
        });
      }
    }
  }
  return [...byType.values()].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

function restored(name: MachineName, persisted: PersistedActor): AnyMachineSnapshot | null {
  if (persisted.value === undefined) return null;
  const snapshot = MACHINES[name].resolveState({ value: persisted.value, context: persisted.context ?? {} });
  return persisted.status === 'active' || persisted.status === undefined ? snapshot : { ...snapshot, status: persisted.status } as AnyMachineSnapshot;
}

function actorAccepts(id: string, machine: MachineName, snapshot: AnyMachineSnapshot | null): ActorAccepts {
  return {
    id,
    machine,
    status: snapshot?.status ?? 'unknown',
    state: snapshot?.value ?? null,
    accepts: snapshot ? acceptedEvents(snapshot) : [],
  };
}

export function agentAccepts(cell: AgentCell): AgentAccepts {
  const actor = cell.actor;
  if (actor) {
    const snapshot = actor.getSnapshot();
    const children = Object.entries(snapshot.children as Record<string, AnyActorRef | undefined>).flatMap(([id, child]) =>
      child ? [actorAccepts(id, childMachine(child.src, id), child.getSnapshot() as AnyMachineSnapshot)] : [],
    );
    return { agent_id: cell.id, live: true, actors: [actorAccepts('agent', 'agent', snapshot), ...children] };
  }
  const persisted = (cell.doc.machine ?? {}) as PersistedActor;
  const children = Object.entries(persisted.children ?? {}).flatMap(([id, child]) => {
    if (!child?.snapshot) return [];
    const name = childMachine(child.src, id);
    return [actorAccepts(id, name, restored(name, child.snapshot))];
  });
  return { agent_id: cell.id, live: false, actors: [actorAccepts('agent', 'agent', restored('agent', persisted)), ...children] };
}
