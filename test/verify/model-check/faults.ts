import type { AnyStateMachine } from 'xstate';
import { agentMachine } from '../../../machines/index.js';
import { editMachine, nodeAt } from '../machine-edit.js';
import type { InvariantId } from './invariants.js';
import type { Bounds, Faults } from './model.js';

/**
 * Fault-injected variants of the composed system: each breaks one seed-002 guarantee the way a
 * plausible bug would, and the checker must find a counterexample for that invariant.
 */
export interface FaultVariant {
  name: string;
  faults: Faults;
  machines?: { agent?: AnyStateMachine };
  /** Bounds beyond the CI bound's that the fault needs to show (e.g. an actor failure). */
  bounds?: Partial<Bounds>;
  expect: InvariantId;
}

/** `terminated` made an ordinary state with a way back to Active (not final). */
export function terminatedWithWayOut(): AnyStateMachine {
  return editMachine(agentMachine, (root) => {
    const terminated = nodeAt(root, 'terminated');
    delete terminated['type'];
    terminated.on = { START: '#agent.active' };
  });
}

export const FAULT_VARIANTS: readonly FaultVariant[] = [
  { name: 'a recovery ends an interrupted turn without recording the transition', faults: { unrecordedRecovery: true }, expect: 1 },
  { name: 'commits skip the fencing-token check', faults: { skipFencing: true }, expect: 2 },
  { name: 'a command is launched without checking the lease first', faults: { launchWithoutLeaseCheck: true }, expect: 2 },
  { name: 'waking skips the snapshot verification', faults: { skipWakeVerification: true }, expect: 3 },
  { name: 'going to sleep keeps the actor live', faults: { keepActorAsleep: true }, expect: 4 },
  { name: 'termination leaves the external trigger active', faults: { keepTriggerOnTerminate: true }, expect: 5 },
  // Both layers must fail: the runtime refuses every operation on a terminated agent before its machine sees it.
  { name: 'the agent machine lets Start leave terminated, and the runtime does not refuse it', faults: { acceptTerminated: true }, machines: { agent: terminatedWithWayOut() }, expect: 5 },
  { name: 'recovery restores memory from the recovery point', faults: { recoverFromSnapshot: true }, bounds: { failures: 1 }, expect: 6 },
  // Either check alone keeps memory: the fence stops a stale writer, the compare-and-set a stale copy.
  { name: 'commits skip both the fencing check and the compare-and-set', faults: { skipFencing: true, skipCompareAndSet: true }, expect: 6 },
];
