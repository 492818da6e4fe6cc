import { describe, expect, it } from 'vitest';
import { machines, type MachineName } from '../../machines/index.js';
import { machineStates, machineTransitions } from '../../src/visualize/graph-walk.js';
import { ALLOW_LIST, CoverageRecorder, machineCoverage } from './coverage.js';
import { MODELS } from './models.js';
import { activeStateIds, generatePaths, transitionKey, type AllowListed } from './paths.js';

/*
 * The generator alone, without a runtime: a gap here is a gap of the path set, not of the runtime.
 */
const names = Object.keys(MODELS) as MachineName[];

describe('generated paths', () => {
  it.each(names)('%s: every transition that is not allow-listed is taken by some path, none that is', (name) => {
    const taken = new Set(generatePaths(MODELS[name]).flatMap((p) => p.steps.flatMap((s) => s.fired)));
    const allowed = new Set(ALLOW_LIST[name].map(transitionKey));
    const expected = machineTransitions(machines[name]).map(transitionKey).filter((key) => !allowed.has(key));
    expect([...taken].sort()).toEqual(expected.sort());
  });

  it.each(names)('%s: the paths reach every state not excused by the allow-list', (name) => {
    const recorder = new CoverageRecorder();
    for (const path of generatePaths(MODELS[name])) {
      recorder.visit(activeStateIds(name, path.initial.value));
      for (const step of path.steps) {
        recorder.take(step.fired);
        recorder.visit(activeStateIds(name, step.after.value));
      }
    }
    const report = machineCoverage(name, machines[name], recorder);
    expect(report.missing).toEqual({ states: [], transitions: [] });
    expect(report.states.covered + report.excused.states.length).toBe(machineStates(machines[name]).length);
  });

  it.each(names)('%s: generation is deterministic and names are unique', (name) => {
    const first = generatePaths(MODELS[name]).map((p) => p.name);
    expect(generatePaths(MODELS[name]).map((p) => p.name)).toEqual(first);
    expect(new Set(first).size).toBe(first.length);
  });

  it('excuses exactly the states that only allow-listed transitions enter', () => {
    const excused = (name: MachineName, allowList?: AllowListed[]): string[] => machineCoverage(name, machines[name], new CoverageRecorder(), allowList).excused.states;
    for (const name of names) expect(excused(name)).toEqual([]);
    const shutdown: AllowListed = { source: 'supervisor.running', event: 'SHUTDOWN', branch: 0, reason: 'example' };
    const drained: AllowListed = { source: 'supervisor.draining', event: 'DRAINED', branch: 0, reason: 'example' };
    expect(excused('supervisor', [shutdown, drained])).toEqual(['supervisor.draining', 'supervisor.stopped']);
    // `stopped` is entered by DRAINED, which is not excused: it stays a missing state.
    expect(excused('supervisor', [shutdown])).toEqual(['supervisor.draining']);
    // `created` is initial: an allow-listed way back into it excuses nothing.
    expect(excused('agent', [{ source: 'agent.initializing', event: 'INITIALIZE.FAILED', branch: 1, reason: 'example' }])).toEqual([]);
  });
});
