import { createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AgentAccepts, InspectionMessage } from '../../src/domain/index.js';
import { createAgent, expectError, openStream, serverSession, settled, startServer, waitFor, type Wire } from './helpers.js';

/** Session id → actor name, from the `@xstate.actor` events seen so far. */
function actorNames(events: readonly StatelyInspectionEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) if (e.type === '@xstate.actor') out.set(e.sessionId, e.name);
  return out;
}

function statesOf(events: readonly StatelyInspectionEvent[], name: string): Array<{ status: string | undefined; value: unknown }> {
  const names = actorNames(events);
  return events.flatMap((e) => (e.type === '@xstate.snapshot' && names.get(e.sessionId) === name ? [{ status: e.snapshot.status, value: (e.snapshot as { value?: unknown }).value }] : []));
}

describe('the Stately inspection protocol (WebSocket and SSE)', () => {
  const { api, server } = serverSession();

  it("Stately's own WebSocket receiver sees the agent's actors start, change state and stop while it runs a prompt with a task; no capability token in any event", async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const wsBase = server().base.replace(/^http/, 'ws');
    const receiver = createWebSocketReceiver({ server: `${wsBase}/api/agents/${agent.id}/inspection` });
    const events: StatelyInspectionEvent[] = [];
    const raw: string[] = [];
    receiver.subscribe((event) => {
      events.push(event);
      raw.push(JSON.stringify(event));
    });
    // The receiver opens on its own; wait until the server has the watcher (the agent is asleep: nothing is sent yet).
    const hub = (server().runtime as unknown as { inspection: { watches: Map<string, unknown> } }).inspection;
    await waitFor(async () => hub.watches.has(agent.id));

    // A wake through the capability URL puts the token on the wire; a prompt runs a task.
    expect((await fetch(agent.triggerUrl, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `ping ${agent.triggerUrl}` })).status).toBe(200);
    expect((await api.post(`/api/control/agents/${agent.id}/prompt`, { text: '/exec-wait echo hi' })).status).toBe(200);

    await waitFor(async () => statesOf(events, agent.id).some((s) => s.status === 'stopped' && s.value === 'sleeping') && events.some((e) => e.type === '@xstate.event' && e.event.type === 'TASK.SETTLED'), 15_000);

    for (const event of events) expect(InspectionMessage.safeParse(event).success, JSON.stringify(event).slice(0, 300)).toBe(true);
    const names = [...actorNames(events).values()];
    expect(names).toEqual(expect.arrayContaining([agent.id, 'continuation']));
    const task = names.find((name) => name !== agent.id && name !== 'continuation');
    expect(task).toBeDefined();
    // The task actor started (its @xstate.actor), changed state and ended.
    expect(statesOf(events, task as string).map((s) => s.value)).toEqual(expect.arrayContaining(['running', 'completed']));
    expect(statesOf(events, task as string).at(-1)?.status).toBe('done');
    // The agent ran the turn, waited for the task and was stopped (passivated) asleep.
    const agentValues = statesOf(events, agent.id).map((s) => JSON.stringify(s.value));
    expect(agentValues).toEqual(expect.arrayContaining(['{"active":"awakeRunning"}', '{"active":"awaitingTask"}']));
    expect(statesOf(events, agent.id).at(-1)).toEqual({ status: 'stopped', value: 'sleeping' });
    // Every actor event says which system it belongs to, and children name their parent.
    const agentSessions = new Set([...actorNames(events).entries()].filter(([, n]) => n === agent.id).map(([s]) => s));
    for (const event of events) if (event.type === '@xstate.actor' && event.name !== agent.id) expect(agentSessions.has(event.parentId ?? '')).toBe(true);

    expect(agent.token.length).toBeGreaterThan(20);
    for (const line of raw) expect(line).not.toContain(agent.token);
    expect(raw.some((line) => line.includes('/callbacks/wake/[redacted]'))).toBe(true);
  });

  it('the SSE form carries the same events, starting with the live actors as they are now', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const stream = await openStream(server().base, `/api/agents/${agent.id}/inspection`);
    try {
      await api.post(`/api/control/agents/${agent.id}/prompt`, { text: '/exec-wait sleep 0.3' });
      const seen: InspectionMessage[] = [];
      for (;;) {
        const message = await stream.next(10_000);
        if (!message) break;
        const parsed = InspectionMessage.parse(JSON.parse(message.data));
        expect(message.event).toBe(parsed.type);
        seen.push(parsed);
        if (parsed.type === '@xstate.snapshot' && parsed.snapshot.status === 'stopped' && parsed.snapshot.value === 'sleeping') break;
      }
      expect(seen[0]).toMatchObject({ type: '@xstate.actor', name: agent.id });
      expect(seen.some((m) => m.type === '@xstate.event' && m.event.type === 'TASK.SPAWN')).toBe(true);
    } finally {
      await stream.close();
    }
  });

  it('refuses an unknown agent before the stream or the upgrade', async () => {
    expectError(await api.get('/api/agents/nobody/inspection', { accept: 'text/event-stream' }), 404, 'agent_not_found');
    const wsBase = server().base.replace(/^http/, 'ws');
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${wsBase}/api/agents/nobody/inspection`);
      socket.on('unexpected-response', (request, response) => {
          request.destroy();
          resolve(response.statusCode ?? 0);
        });
      socket.on('open', () => resolve(101));
    });
    expect(status).toBe(404);
  });

  it('lists the events the current state accepts, read from the machines', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const reply = await api.get<Wire<typeof AgentAccepts>>(`/api/inspector/agents/${agent.id}/accepts`);
    expect(reply.status, reply.text).toBe(200);
    const body = AgentAccepts.parse(reply.body);
    expect(body.live).toBe(false);
    const agentActor = body.actors.find((a) => a.id === 'agent');
    expect(agentActor?.state).toBe('sleeping');
    const types = agentActor?.accepts.map((e) => e.type);
    expect(types).toEqual(['RECOVER', 'SLEEP.FAILED', 'STOP', 'TERMINATE', 'WAKE', 'task.finished']);
    expect(agentActor?.accepts.find((e) => e.type === 'STOP')).toEqual({ type: 'STOP', enabled: true, transitions: [{ source: 'sleeping', targets: ['stopped'], guard: null }] });
    const continuation = body.actors.find((a) => a.id === 'continuation');
    const hint = continuation?.accepts.find((e) => e.type === 'WAKE_HINT');
    expect(hint?.transitions.map((t) => t.guard)).toEqual(['isIgnoredHint', 'isCoalescedHint', null]);

    // Stopped: START is accepted, STOP no longer.
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    const stopped = AgentAccepts.parse((await api.get(`/api/inspector/agents/${agent.id}/accepts`)).body);
    const stoppedTypes = stopped.actors.find((a) => a.id === 'agent')?.accepts.map((e) => e.type);
    expect(stoppedTypes).toContain('START');
    expect(stoppedTypes).not.toContain('STOP');
    expectError(await api.get('/api/inspector/agents/nobody/accepts'), 404, 'agent_not_found');
  });
});

describe('inspection in bearer mode', () => {
  it('needs the bearer token on both forms; the token never appears in an event', async () => {
    const token = 'inspect-secret-token-1234567890';
    const running = await startServer({ token });
    try {
      const auth = { authorization: `Bearer ${token}` };
      const created = await fetch(`${running.base}/api/control/agents`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 'b1', mission: `mission mentions ${token}` }) });
      expect(created.status).toBe(201);
      expect((await fetch(`${running.base}/api/agents/b1/inspection`, { headers: { accept: 'text/event-stream' } })).status).toBe(401);
      const wsBase = running.base.replace(/^http/, 'ws');
      const refused = await new Promise<number>((resolve) => {
        const socket = new WebSocket(`${wsBase}/api/agents/b1/inspection`);
        socket.on('unexpected-response', (request, response) => {
          request.destroy();
          resolve(response.statusCode ?? 0);
        });
        socket.on('open', () => resolve(101));
      });
      expect(refused).toBe(401);

      const socket = new WebSocket(`${wsBase}/api/agents/b1/inspection`, { headers: auth });
      const messages: string[] = [];
      socket.on('message', (data: Buffer) => messages.push(data.toString('utf8')));
      await new Promise((resolve, reject) => {
        socket.on('open', resolve);
        socket.on('error', reject);
      });
      const hub = (running.runtime as unknown as { inspection: { watches: Map<string, unknown> } }).inspection;
      await waitFor(async () => hub.watches.has('b1'));
      await fetch(`${running.base}/api/control/agents/b1/prompt`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text: `/wait operator_input ${token}` }) });
      const isWaitSet = (m: string): boolean => {
        const parsed = InspectionMessage.parse(JSON.parse(m));
        return parsed.type === '@xstate.event' && parsed.event.type === 'WAIT.SET';
      };
      await waitFor(async () => messages.some(isWaitSet), 10_000);
      socket.close();
      for (const message of messages) expect(message).not.toContain(token);
      expect(messages.find(isWaitSet)).toContain('"resource":"[redacted]"');
    } finally {
      await running.close();
    }
  });
});
