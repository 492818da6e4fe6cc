import { TransitionRecord, type AgentEvent } from '../domain/index.js';

export interface ReasonChain {
  transitions: TransitionRecord[];
  /** Places where a transition does not start where the previous one ended (should be none). */
  gaps: Array<{ seq: number; expected_from: string; actual_from: string }>;
}

/**
 * Seed 002 invariant 1: every transition's reason chain can be rebuilt from the event records
 * alone. Reads only `transition_committed` events, never the agent's current state.
 */
export function reasonChain(events: readonly AgentEvent[]): ReasonChain {
  const transitions = events
    .filter((event) => event.type === 'transition_committed')
    .map((event) => TransitionRecord.parse(event.payload))
    .sort((a, b) => a.seq - b.seq);
  const gaps: ReasonChain['gaps'] = [];
  for (let i = 1; i < transitions.length; i++) {
    const previous = transitions[i - 1] as TransitionRecord;
    const current = transitions[i] as TransitionRecord;
    if (previous.to_state !== current.from_state) {
      gaps.push({ seq: current.seq, expected_from: previous.to_state, actual_from: current.from_state });
    }
  }
  return { transitions, gaps };
}
