import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { agentMachine, continuationMachine, taskMachine } from '../../machines/index.js';
import { checkLiveness, type PropertyName, type PropertyResult } from './liveness/check.js';
import { LIVENESS, type LivenessSpec } from './liveness/specs.js';
import { editMachine, nodeAt, withoutGuard, withoutTransition } from './machine-edit.js';
import { formatCounterexample } from './render.js';

function spec(name: LivenessSpec['name']): LivenessSpec {
  const found = LIVENESS.find((s) => s.name === name);
  if (!found) throw new Error(`no liveness spec for ${name}`);
  return found;
}

/** The spec over a copy of its machine. */
function over(name: LivenessSpec['name'], machine: AnyStateMachine): LivenessSpec {
  const base = spec(name);
  return { ...base, model: { ...base.model, machine } };
}

function result(results: PropertyResult[], property: PropertyName): PropertyResult {
  const found = results.find((r) => r.property === property);
  if (!found) throw new Error(`no result for ${property}`);
  return found;
}

describe('liveness of the machines, proven over their graphs (npm run verify runs the same checks)', () => {
  for (const machineSpec of LIVENESS) {
    it(`${machineSpec.name}: every property holds`, () => {
      const { graph, results } = checkLiveness(machineSpec);
      const failures = results.filter((r) => !r.holds).flatMap((r) => r.counterexamples.map(formatCounterexample));
      expect(failures, failures.join('\n\n')).toEqual([]);
      // Not vacuous: the graph has states beyond the initial one, and each waiting state was reached.
      expect(graph.nodes.size).toBeGreaterThan(2);
      expect(result(results, 'wait edges').checked).toMatch(/[1-9]\d* state × edge pairs/);
    });
  }

  it('the agent graph has every state of the machine (stopped twice: awake and asleep), and Stop is checked on all 12 non-final ones', () => {
    const { graph, results } = checkLiveness(spec('agent'));
    expect(graph.nodes.size).toBe(13);
    expect(result(results, 'stop reachable').checked).toBe('12 non-final states');
  });

  it('every continuation wait kind is held at the agent and at the work-item level, each with a matching trigger', () => {
    const labels = spec('continuation').waiting.map((w) => w.label);
    for (const kind of ['task', 'external', 'operator', 'timer', 'system']) {
      expect(labels).toContain(`wait.waiting (${kind}, agent-level)`);
      expect(labels).toContain(`wait.waiting (${kind}, work item)`);
    }
    // Derived from the wait matcher: an operator wait (at either level) is ended by an operator prompt only.
    for (const label of ['wait.waiting (operator, agent-level)', 'wait.waiting (operator, work item)']) {
      expect(spec('continuation').waiting.find((w) => w.label === label)?.edges[0]?.seed).toContain('(operator_prompt)');
    }
    expect(spec('continuation').waiting.find((w) => w.label === 'wait.waiting (external, agent-level)')?.edges[0]?.seed).toContain('(channel_event, webhook_event, callback_event)');
  });
});

describe('the liveness checker finds injected faults', () => {
  it('stopped without START: the wait edge is missing, with the path that reaches stopped', () => {
    const { results } = checkLiveness(over('agent', withoutTransition(agentMachine, 'stopped', 'START')));
    const edges = result(results, 'wait edges');
    expect(edges.holds).toBe(false);
    const [cx] = edges.counterexamples;
    expect(cx?.summary).toBe('stopped (Start) has no trigger edge START → active');
    expect(cx?.steps.at(-1)?.state).toBe('stopped');
    // The shortest way to stopped: initialize, then stop.
    expect(cx?.steps.map((s) => s.event.split(' ')[0])).toEqual(['INITIALIZE', 'INITIALIZE.DONE', 'STOP']);
    expect(formatCounterexample(cx as NonNullable<typeof cx>)).toContain('stateDiagram-v2');
  });

  it('recovering without RECOVER.DONE: recovering (and what only leads there) can no longer reach rest', () => {
    const { results } = checkLiveness(over('agent', withoutTransition(agentMachine, 'recovering', 'RECOVER.DONE')));
    const rest = result(results, 'reaches rest');
    expect(rest.holds).toBe(false);
    expect(rest.counterexamples.map((c) => c.steps.at(-1)?.state)).toContain('recovering');
    const cx = rest.counterexamples.find((c) => c.steps.at(-1)?.state === 'recovering');
    expect(cx?.note).toBe('from here only terminating, terminated can be reached');
  });

  it("awakeRunning's stale-run guard removed: every TURN.FINISHED is ignored, the turn has no trigger edge", () => {
    const { results } = checkLiveness(over('agent', withoutGuard(agentMachine, 'active.awakeRunning', 'TURN.FINISHED', 0)));
    const edges = result(results, 'wait edges');
    expect(edges.holds).toBe(false);
    expect(edges.counterexamples.map((c) => c.summary)).toContain('active.awakeRunning (the turn) has no trigger edge TURN.FINISHED → {"active":"awakeIdle"} | {"active":"awaitingTask"}');
  });

  it('terminating without TERMINATE.FAILED: the timeout edge of seed 002 scenario 5 is missing', () => {
    const { results } = checkLiveness(over('agent', withoutTransition(agentMachine, 'terminating', 'TERMINATE.FAILED')));
    const summaries = result(results, 'wait edges').counterexamples.map((c) => c.summary);
    expect(summaries).toEqual(['terminating (its effect) has no timeout edge TERMINATE.FAILED → recovering']);
  });

  it('every way to stop removed: no state can reach one that accepts STOP', () => {
    const machine = editMachine(agentMachine, (root) => {
      delete nodeAt(root, 'active').on?.['STOP'];
      delete nodeAt(root, 'sleeping').on?.['STOP'];
      delete nodeAt(root, 'active.awakeRunning').on?.['TURN.ABORT'];
    });
    const stop = result(checkLiveness(over('agent', machine)).results, 'stop reachable');
    expect(stop.holds).toBe(false);
    expect(stop.counterexamples).toHaveLength(10);
    expect(stop.counterexamples[0]?.steps).toEqual([]);
    expect(stop.counterexamples[0]?.summary).toBe('a state accepting STOP is unreachable from created');
  });

  it('terminated given a way out: the final-state check names it', () => {
    const machine = editMachine(agentMachine, (root) => {
      nodeAt(root, 'terminated').on = { RECOVER: '#agent.recovering' };
    });
    const final = result(checkLiveness(over('agent', machine)).results, 'no way out of final');
    expect(final.holds).toBe(false);
    expect(final.counterexamples.map((c) => c.summary)).toContain('agent.terminated declares transitions: RECOVER');
  });

  it('a running task without STOP: TaskStop (seed 004) has no edge, and Cancelling is never entered', () => {
    const { results } = checkLiveness(over('task', withoutTransition(taskMachine, 'running', 'STOP')));
    expect(result(results, 'wait edges').counterexamples.map((c) => c.summary)).toEqual([
      'running (its process) has no cancel edge STOP → cancelling',
      'cancelling (the process to end) is never reached',
    ]);
  });

  it('a continuation wait without WAIT.CANCEL: every kind of wait loses its cancel edge', () => {
    const { results } = checkLiveness(over('continuation', withoutTransition(continuationMachine, 'wait.waiting', 'WAIT.CANCEL')));
    const missing = result(results, 'wait edges').counterexamples.filter((c) => c.summary.includes('no cancel edge WAIT.CANCEL'));
    expect(new Set(missing.map((c) => c.summary.split(' has ')[0])).size).toBe(10);
  });
});
