import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type StateValue } from 'xstate';
import { TransitionRecord, type AgentEvent } from '../domain/index.js';
import { statePath } from '../runtime/agent/tx.js';

/**
 * Replays an agent's recorded transitions through pure machines: XState's `transition` computes
 * each next state and returns the actions instead of running them, so nothing is spawned, sent,
 * written or emitted. Every `transition_committed` event carries the machine event that caused it
 * (`machine_event`); the replay starts from the machine's initial state, feeds those events in
 * commit order, and stops at the first record whose start or end the machines do not reproduce.
 */
export interface Divergence {
  /** The transition's `seq` (its place in the reason chain) and the event log's `event_seq`. */
  seq: number;
  event_seq: number;
  event: string | null;
  recorded: { from_state: string; to_state: string };
  /** What the machines give: the state they are in before the event, and after it. */
  replayed: { from_state: string; to_state: string | null };
  reason: string;
}

export interface ReplayReport {
  agent_id: string;
  transitions: number;
  /** Records whose machine event was fed to the machines. */
  replayed: number;
  /** Records written before machine events were logged: their recorded end is taken as is. */
  unrecorded: number;
  divergence: Divergence | null;
}

/** A recorded state path (`active.awakeIdle`) as a state value; `null` when the machine has no such state. */
function valueOf(machine: AnyStateMachine, path: string): StateValue | null {
  const keys = path.split('.');
  let value: StateValue = keys[keys.length - 1] as string;
  for (let i = keys.length - 2; i >= 0; i--) value = { [keys[i] as string]: value };
  try {
    machine.resolveState({ value, context: {} as never });
    return value;
  } catch {
    return null;
  }
}

export function replayTransitions(events: readonly AgentEvent[], machine: AnyStateMachine, agentId: string): ReplayReport {
  const records = events
    .filter((e) => e.type === 'transition_committed')
    .map((e) => ({ event_seq: e.event_seq, record: TransitionRecord.parse(e.payload), machineEvent: (e.payload['machine_event'] ?? null) as EventObject | null }))
    .sort((a, b) => a.record.seq - b.record.seq);
  const report: ReplayReport = { agent_id: agentId, transitions: records.length, replayed: 0, unrecorded: 0, divergence: null };
  let [current] = initialTransition(machine, { agentId } as never) as [AnyMachineSnapshot, unknown];
  for (const { event_seq, record, machineEvent } of records) {
    const recorded = { from_state: record.from_state, to_state: record.to_state };
    const diverge = (replayedTo: string | null, reason: string): ReplayReport => {
      report.divergence = { seq: record.seq, event_seq, event: machineEvent?.type ?? null, recorded, replayed: { from_state: statePath(current.value), to_state: replayedTo }, reason };
      return report;
    };
    if (statePath(current.value) !== record.from_state) return diverge(null, `the machines are in ${statePath(current.value)}, the record starts in ${record.from_state}`);
    if (!machineEvent) {
      // Logged before machine events were: adopt the recorded end, when the machines have it.
      const value = valueOf(machine, record.to_state);
      if (value === null) return diverge(null, `the machines have no state ${record.to_state}`);
      current = machine.resolveState({ value, context: current.context });
      report.unrecorded += 1;
      continue;
    }
    if (current.status !== 'active' || machine.getTransitionData(current, machineEvent as never).length === 0) {
      return diverge(null, `${machineEvent.type} is not taken in ${statePath(current.value)}`);
    }
    const [next] = transition(machine, current, machineEvent as never) as [AnyMachineSnapshot, unknown];
    report.replayed += 1;
    if (statePath(next.value) !== record.to_state) return diverge(statePath(next.value), `${machineEvent.type} leads to ${statePath(next.value)}, the record to ${record.to_state}`);
    current = next;
  }
  return report;
}
