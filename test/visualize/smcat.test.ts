import { describe, expect, it } from 'vitest';
import { agentMachine, machines } from '../../machines/index.js';
import { machineGuards, machineTransitions } from '../../src/visualize/graph-walk.js';
import { toScxml, toSmcatJson, toSvg } from '../../src/visualize/smcat.js';

const AGENT_STATES = [
  'created',
  'initializing',
  'active',
  'awakeIdle',
  'awakeRunning',
  'awaitingTask',
  'sleeping',
  'waking',
  'recovering',
  'evolving',
  'stopped',
  'terminating',
  'terminated',
];

/** The visible text of an SVG: what a reader sees, not ids or titles. */
function svgTexts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) => match[1]!.replace(/&#160;/g, ' ').trim());
}

describe('agent SVG (state-machine-cat)', () => {
  it('shows every agent state name and every guard name the agent uses', async () => {
    const texts = svgTexts(await toSvg(agentMachine));
    for (const state of AGENT_STATES) {
      expect(texts.some((text) => text === state || text.startsWith(`${state} (`)), state).toBe(true);
    }
    const guards = machineGuards(agentMachine);
    expect(guards.length).toBeGreaterThan(0);
    for (const guard of guards) expect(texts.some((text) => text.endsWith(`[${guard}]`)), guard).toBe(true);
  });

  it('draws the same edges as the Mermaid diagram, plus the initial and final arrows', () => {
    const json = toSmcatJson(agentMachine);
    const drawn = machineTransitions(agentMachine).filter((t) => t.target !== null || t.guard !== null);
    const labelled = (json.transitions ?? []).filter((t) => t.label !== undefined);
    expect(labelled).toHaveLength(drawn.length);
    // created (top level), awakeIdle (inside active); terminated's final arrow.
    expect((json.transitions ?? []).filter((t) => t.label === undefined)).toHaveLength(3);
  });
});

describe('SCXML (state-machine-cat)', () => {
  it('keeps the agent states, guards as conditions and raw event names', async () => {
    const scxml = await toScxml(agentMachine);
    expect(scxml).toMatch(/^<\?xml[^>]*>\s*<scxml /);
    for (const state of AGENT_STATES) expect(scxml).toContain(`<state id="${state}"`);
    expect(scxml).toContain('<transition event="TURN.START" cond="hasQueuedInput" target="awakeRunning"/>');
    expect(scxml).toMatch(/<final id="[^"]+"/);
  });

  it('renders the parallel continuation machine as <parallel>', async () => {
    const scxml = await toScxml(machines.continuation);
    expect(scxml).toContain('<parallel id="continuation">');
    expect(scxml).toContain('<state id="wait"');
    expect(scxml).toContain('<state id="wakeHint"');
  });
});
