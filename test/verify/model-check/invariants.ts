import { AGENTS, INSTANCES, phaseOf, statusOf, type Model, type ModelState } from './model.js';
import type { Outcome } from './step-context.js';

/**
 * The six lifecycle invariants of seed 002, over the abstract state. State invariants hold in
 * every reachable state; step invariants on every step between reachable states (the
 * irreversibility and monotonicity ones are about change, so they read both ends).
 */
export const INVARIANTS = {
  1: 'every transition’s reason chain can be rebuilt from the event records',
  2: 'at most one instance holds the write lease (only it writes, only it acts)',
  3: 'Active corresponds to a verified recovery point or the initial snapshot',
  4: 'Sleeping holds no ordinary compute, but keeps what it needs to be woken',
  5: 'Terminated is irreversible and holds no run permission',
  6: 'recovery never lowers the identity version or overwrites newer memory',
} as const;

export type InvariantId = keyof typeof INVARIANTS;

export interface Violation {
  invariant: InvariantId;
  detail: string;
}

/** An instance whose commits the store would accept now. */
export function writers(model: Model, state: ModelState): number[] {
  return INSTANCES.flatMap((_, i) => {
    const inst = state.inst[i] as ModelState['inst'][number];
    if (!inst.up || inst.lost || inst.tok < 0) return [];
    const holds = state.lease.h === i && state.lease.tok === inst.tok;
    return holds || model.faults.skipFencing ? [i] : [];
  });
}

/**
 * Compute an agent holds: a live process (wherever it was started: a process outlives the
 * runtime that started it), and a running turn or a live actor in an instance that can write.
 * A turn still running in an instance that was fenced without knowing it yet is not counted:
 * nothing it does lands (its commit is fenced, and that aborts it), which invariant 2's checks
 * of writers and of side effects before a commit cover.
 */
function compute(model: Model, state: ModelState, a: number): string[] {
  const out: string[] = [];
  (state.procs[a] as number[]).forEach((owner, slot) => {
    if (owner >= 0) out.push(`task-${slot + 1}'s process (started by ${INSTANCES[owner]})`);
  });
  for (const i of writers(model, state)) {
    const inst = state.inst[i] as ModelState['inst'][number];
    if (inst.runs[a]) out.push(`a turn running in ${INSTANCES[i]}`);
    if (inst.cells[a]?.actor) out.push(`a live actor in ${INSTANCES[i]}`);
  }
  return out;
}

export function stateViolations(model: Model, state: ModelState): Violation[] {
  const out: Violation[] = [];
  const found = writers(model, state);
  if (found.length > 1) out.push({ invariant: 2, detail: `${found.map((i) => INSTANCES[i]).join(' and ')} can both write` });
  state.store.forEach((entry, a) => {
    if (!entry) return;
    const agent = AGENTS[a];
    const doc = entry.doc;
    const path = model.machines.agent.path(doc.a);
    if (entry.gap || entry.chainEnd !== path) {
      out.push({ invariant: 1, detail: `${agent} is ${path} but its transition log ${entry.gap ? 'has a gap' : `ends at ${entry.chainEnd}`}` });
    }
    const phase = phaseOf(model, doc);
    // Stopped carries the Active phase label (DESIGN.md's table) but runs nothing; leaving it
    // goes back through Waking when it was stopped asleep.
    if (phase === 'active' && statusOf(model, doc) !== 'stopped' && doc.basis !== 'verified') {
      out.push({ invariant: 3, detail: `${agent} is active over ${doc.basis === 'asleep' ? 'a recovery point no wake verified' : 'an unverified recovery point'}` });
    }
    if (phase === 'sleeping') {
      const held = compute(model, state, a);
      if (held.length > 0) out.push({ invariant: 4, detail: `${agent} is sleeping and holds ${held.join(', ')}` });
    }
    if (phase === 'terminated') {
      // Run permission: a process, a turn, an external trigger (a final actor can run nothing).
      const held = compute(model, state, a).filter((what) => !what.startsWith('a live actor'));
      if (held.length > 0) out.push({ invariant: 5, detail: `${agent} is terminated and holds ${held.join(', ')}` });
      if (doc.trg) out.push({ invariant: 5, detail: `${agent} is terminated with an active external trigger` });
    }
  });
  return out;
}

export function stepViolations(model: Model, before: ModelState, step: Outcome): Violation[] {
  const out: Violation[] = [];
  for (const effect of step.sideEffects) {
    const inst = before.inst[effect.inst] as ModelState['inst'][number];
    if (!(before.lease.h === effect.inst && before.lease.tok === inst.tok)) {
      out.push({ invariant: 2, detail: `${INSTANCES[effect.inst]} ${effect.what} of ${AGENTS[effect.agent]} without holding the lease (${INSTANCES[before.lease.h] ?? 'nobody'} holds token ${before.lease.tok})` });
    }
  }
  before.store.forEach((was, a) => {
    const now = step.state.store[a];
    if (!was || !now) return;
    const agent = AGENTS[a];
    if (phaseOf(model, was.doc) === 'terminated' && phaseOf(model, now.doc) !== 'terminated') {
      out.push({ invariant: 5, detail: `${agent} left terminated for ${model.machines.agent.path(now.doc.a)}` });
    }
    // Going to sleep keeps the wake conditions: the external trigger and the queued input.
    if (phaseOf(model, was.doc) !== 'sleeping' && phaseOf(model, now.doc) === 'sleeping' && ((was.doc.trg && !now.doc.trg) || now.doc.q < was.doc.q)) {
      out.push({ invariant: 4, detail: `${agent} went to sleep and dropped ${now.doc.trg ? 'queued input' : 'its external trigger'}` });
    }
    if (now.doc.m < was.doc.m) out.push({ invariant: 6, detail: `${agent}'s memory went back from version ${was.doc.m} to ${now.doc.m}` });
  });
  return out;
}
