import { cloneState, normalize, projections, type Model, type ModelState } from './model.js';
import { StepContext, type Outcome } from './step-context.js';

/**
 * The premise that lets the exploration deduplicate by (shared, agent) projections: a step of one
 * agent leaves every other agent's projection as it was, or changes it only as a renewal that
 * finds the lease gone would (an instance becomes fenced). Checked on every step explored.
 */
export class IndependenceCheck {
  steps = 0;
  readonly failures: string[] = [];

  constructor(private readonly model: Model) {}

  check(before: ModelState, step: Outcome): void {
    if (step.agent === undefined) return;
    this.steps += 1;
    const was = projections(before);
    const now = projections(step.state);
    const fenced = step.state.inst.flatMap((inst, i) => (inst.lost && !before.inst[i]?.lost ? [i] : []));
    const asRenewal = fenced.length > 0 ? projections(this.fence(before, fenced)) : null;
    now.forEach((projection, b) => {
      if (b === step.agent || projection === was[b] || projection === asRenewal?.[b]) return;
      if (this.failures.length < 5) this.failures.push(`"${step.label}" changed agent ${b}'s projection:\n  ${was[b]}\n  ${projection}`);
    });
  }

  private fence(state: ModelState, instances: number[]): ModelState {
    const ctx = new StepContext(this.model, cloneState(state));
    for (const i of instances) ctx.leaseLost(i);
    return normalize(this.model, ctx.state);
  }
}
