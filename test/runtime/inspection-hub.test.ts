import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InspectionMessage } from '../../src/domain/index.js';
import { REDACTED, inspectionJson, redactText } from '../../src/runtime/inspection-json.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventually, openRuntime, tempDataDir, untilAsleep } from './helpers.js';

type Named = InspectionMessage & { name?: string };

/** Session id → actor name, from the `@xstate.actor` messages seen so far. */
function names(messages: InspectionMessage[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) if (m.type === '@xstate.actor') out.set(m.sessionId, m.name);
  return out;
}

function snapshotsOf(messages: InspectionMessage[], actor: string): Array<{ status: string; value: unknown; event: string }> {
  const byName = names(messages);
  return messages
    .filter((m): m is Extract<InspectionMessage, { type: '@xstate.snapshot' }> => m.type === '@xstate.snapshot' && byName.get(m.sessionId) === actor)
    .map((m) => ({ status: m.snapshot.status, value: m.snapshot.value, event: m.event.type }));
}

describe('InspectionHub (live inspection of watched agents)', () => {
  let dir: ReturnType<typeof tempDataDir>;
  let runtime: Runtime;
  beforeEach(async () => {
    dir = tempDataDir();
    runtime = await openRuntime(dir.dir);
  });
  afterEach(async () => {
    await runtime.close();
    dir.cleanup();
  });

  it('reports a watched agent rehydrating, its task starting, changing state and ending, and the agent stopping again', async () => {
    await runtime.createAgent({ agent_id: 'w' });
    await untilAsleep(runtime, 'w');
    const seen: InspectionMessage[] = [];
    const stop = await runtime.inspect('w', (m) => seen.push(m));
    // Asleep: passivated, so nothing is live to report yet.
    expect(seen).toEqual([]);

    await runtime.prompt('w', { text: '/exec-wait echo hi' });
    await eventually(() => snapshotsOf(seen, 'w').some((s) => JSON.stringify(s.value) === '"sleeping"' && s.status === 'stopped'), 15_000, 'agent stopped asleep');
    stop();

    const actors = [...names(seen).values()];
    expect(actors).toContain('w');
    expect(actors).toContain('continuation');
    const task = actors.find((name) => name.startsWith('task'));
    expect(task, actors.join(',')).toBeDefined();
    const taskSnapshots = snapshotsOf(seen, task as string);
    expect(taskSnapshots.map((s) => s.value)).toEqual(expect.arrayContaining(['running', 'completed']));
    expect(taskSnapshots.at(-1)?.status).toBe('done');

    const agentValues = snapshotsOf(seen, 'w').map((s) => JSON.stringify(s.value));
    expect(agentValues).toEqual(expect.arrayContaining(['{"active":"awakeRunning"}', '{"active":"awaitingTask"}', '"sleeping"']));
    // Every snapshot of the agent follows an @xstate.actor that introduced its session.
    const introduced = new Set<string>();
    for (const m of seen) {
      if (m.type === '@xstate.actor') introduced.add(m.sessionId);
      else expect(introduced.has(m.sessionId), `${m.type} before its actor`).toBe(true);
    }
  });

  it('observes only while someone watches, and re-attaches when the agent is rehydrated', async () => {
    await runtime.createAgent({ agent_id: 'a' });
    await untilAsleep(runtime, 'a');
    const hub = (runtime as unknown as { inspection: { observed: number } }).inspection;
    expect(hub.observed).toBe(0);

    const first: InspectionMessage[] = [];
    const stopFirst = await runtime.inspect('a', (m) => first.push(m));
    await runtime.prompt('a', { text: 'hello' });
    await eventually(() => snapshotsOf(first, 'a').some((s) => s.status === 'stopped'), 10_000, 'first activation ends');
    const sessionsBefore = new Set([...names(first).entries()].filter(([, n]) => n === 'a').map(([s]) => s));

    // A second watcher joins while the agent is asleep; a second activation gets a new actor.
    const second: InspectionMessage[] = [];
    const stopSecond = await runtime.inspect('a', (m) => second.push(m));
    await runtime.prompt('a', { text: 'again' });
    await eventually(() => snapshotsOf(second, 'a').some((s) => s.status === 'stopped'), 10_000, 'second activation ends');
    const rehydrated = [...names(second).entries()].filter(([, n]) => n === 'a').map(([s]) => s);
    expect(rehydrated.length).toBeGreaterThan(0);
    for (const session of rehydrated) expect(sessionsBefore.has(session)).toBe(false);
    // Both watchers saw the second activation.
    expect(snapshotsOf(first, 'a').filter((s) => s.status === 'stopped').length).toBe(2);

    stopFirst();
    stopSecond();
    expect(hub.observed).toBe(0);
    const after = first.length;
    await runtime.prompt('a', { text: 'unwatched' });
    await untilAsleep(runtime, 'a');
    expect(first.length).toBe(after);
  });

  it('gives a watcher that joins a live agent its actors as they are now', async () => {
    await runtime.createAgent({ agent_id: 'live' });
    await untilAsleep(runtime, 'live');
    const early: InspectionMessage[] = [];
    const stopEarly = await runtime.inspect('live', (m) => early.push(m));
    await runtime.prompt('live', { text: '/exec-wait sleep 1' });
    await eventually(() => snapshotsOf(early, 'live').some((s) => JSON.stringify(s.value) === '{"active":"awaitingTask"}'), 10_000, 'awaiting the task');

    const late: InspectionMessage[] = [];
    const stopLate = await runtime.inspect('live', (m) => late.push(m));
    const intro = late.filter((m) => m.type === '@xstate.actor') as Array<Named & { snapshot: { value?: unknown } }>;
    expect(intro[0]).toMatchObject({ name: 'live', snapshot: { value: { active: 'awaitingTask' } } });
    expect(intro.map((m) => m.name)).toContain('continuation');
    expect(intro.some((m) => m.name?.startsWith('task') && ['queued', 'running'].includes(m.snapshot.value as string)), JSON.stringify(intro.map((m) => [m.name, m.snapshot.value]))).toBe(true);
    stopEarly();
    stopLate();
  });

  it('fails for an unknown agent', async () => {
    await expect(runtime.inspect('nobody', () => undefined)).rejects.toMatchObject({ code: 'agent_not_found' });
  });
});

describe('inspection JSON (redaction)', () => {
  it('redacts secret-named keys, capability URLs, bearer tokens and known secrets, and cuts cycles', () => {
    const cyclic: Record<string, unknown> = { name: 'x' };
    cyclic['self'] = cyclic;
    const json = inspectionJson(
      {
        token: 'abc',
        nested: { api_key: 'k', Authorization: 'Bearer zzz', note: 'see http://h/callbacks/wake/SeCrEt123?x=1 now' },
        text: 'use Bearer qwerty please, control=ctl-secret',
        fn: function named() {},
        cyclic,
        when: new Date(0),
      },
      { secrets: ['ctl-secret'], maxDepth: 4 },
    );
    expect(json).toMatchObject({
      token: REDACTED,
      nested: { api_key: REDACTED, Authorization: REDACTED, note: `see http://h/callbacks/wake/${REDACTED}?x=1 now` },
      text: `use Bearer ${REDACTED} please, control=${REDACTED}`,
      fn: { type: 'named' },
      cyclic: { name: 'x', self: { name: 'x', self: { name: 'x', self: '[depth]' } } },
      when: '1970-01-01T00:00:00.000Z',
    });
    expect(JSON.stringify(json)).not.toMatch(/SeCrEt123|qwerty|zzz|ctl-secret|"abc"/);
    expect(redactText('/callbacks/enqueue/tok')).toBe(`/callbacks/enqueue/${REDACTED}`);
  });
});
