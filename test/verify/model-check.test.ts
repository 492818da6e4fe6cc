import { describe, expect, it } from 'vitest';
import { explore } from './model-check/explore.js';
import { FAULT_VARIANTS } from './model-check/faults.js';
import { IndependenceCheck } from './model-check/independence.js';
import { INVARIANTS } from './model-check/invariants.js';
import { CI_BOUNDS, createModel } from './model-check/model.js';
import { formatCounterexample } from './render.js';

/** The CI bound with one task per agent and no recovery-point faults: the independence check's smaller bound. */
const SMALL = { ...CI_BOUNDS, corruptions: 0, schemaChanges: 0 };

describe('the seed-002 invariants hold in every state of the composed system (npm run verify runs the same exploration)', () => {
  it('the CI bound: exhaustive, no violation, and it reaches the situations the invariants are about', () => {
    const result = explore(createModel(CI_BOUNDS));
    const found = result.violations.map((v) => formatCounterexample(v.path));
    expect(found, found.join('\n\n')).toEqual([]);
    expect(result.truncated).toBe(false);
    // Not vacuous: every lifecycle phase, a takeover with a fenced instance, both instances up, a live process.
    for (const feature of [
      'phase:active/awake_idle',
      'phase:active/awake_running',
      'phase:active/awaiting_task',
      'phase:active/stopped',
      'phase:sleeping/asleep',
      'phase:recovering/stopped',
      'phase:evolving/awake_idle',
      'phase:terminated/stopped',
      'token:2',
      'an instance fenced',
      'both instances up',
      'a process running',
    ]) {
      expect(result.seen, feature).toContain(feature);
    }
    expect(result.states).toBeGreaterThan(10_000);
  }, 600_000);

  it('deduplicating by (shared, agent) projections is sound: no step of one agent changes another agent’s projection but as a renewal would', () => {
    const model = createModel(SMALL);
    const check = new IndependenceCheck(model);
    const result = explore(model, { onStep: (before, step) => check.check(before, step) });
    expect(check.failures, check.failures.join('\n')).toEqual([]);
    expect(check.steps).toBeGreaterThan(result.states);
  }, 600_000);
});

describe('the model checker finds the faults injected into the composed system', () => {
  for (const variant of FAULT_VARIANTS) {
    it(`${variant.name}: a counterexample for invariant ${variant.expect} (${INVARIANTS[variant.expect]})`, () => {
      const model = createModel({ ...CI_BOUNDS, ...variant.bounds }, variant.faults, variant.machines ?? {});
      const result = explore(model, { until: variant.expect });
      const found = result.violations.find((v) => v.violation.invariant === variant.expect);
      expect(found, `no counterexample for invariant ${variant.expect}`).toBeDefined();
      const path = found?.path;
      // The path replays from the initial state (explore rebuilt it so) and renders as Mermaid.
      expect(path?.steps.length).toBeGreaterThan(0);
      expect(formatCounterexample(path as NonNullable<typeof path>)).toContain('stateDiagram-v2');
    }, 600_000);
  }

  it('commits without the fencing check: two instances can write, shown on the path where the second takes over', () => {
    const result = explore(createModel(CI_BOUNDS, { skipFencing: true }), { until: 2 });
    const found = result.violations.find((v) => v.violation.invariant === 2);
    expect(found?.violation.detail).toBe('R1 and R2 can both write');
    expect(found?.path.steps.map((s) => s.event)).toEqual(['R1: starts (acquires the lease, recovers)', 'the lease expires (its holder did not renew in time)', 'R2: starts (acquires the lease, recovers)']);
  });

  it('a launch without the lease check: the fenced instance starts the command, after the other took over', () => {
    const result = explore(createModel(CI_BOUNDS, { launchWithoutLeaseCheck: true }), { until: 2 });
    const found = result.violations.find((v) => v.violation.invariant === 2);
    expect(found?.violation.detail).toMatch(/^R\d spawned task-1 of [AB] without holding the lease \(R\d holds token 2\)$/);
    expect(found?.path.steps.at(-1)?.event).toMatch(/launch task-1/);
  });
});
