import { describe, expect, it } from 'vitest';
import type { AgentSummary } from '../../src/domain/index.js';
import type { AgentResponse, CreateAgentResponse, TriggerCreatedResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, settled, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

const summaryOf = async (id: string): Promise<AgentSummary> => (await api.get<AgentSummary>(`/api/agents/${id}/status`)).body;
const keyCount = (value: unknown, key: string): number => (JSON.stringify(value).match(new RegExp(`"${key}":`, 'g')) ?? []).length;

describe('the AgentSummary says what is so now', () => {
  it('a sleeping agent that ran a turn reports runtime_posture sleeping, not the awake of its last turn', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    expect((await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'just think about it' })).status).toBe(200);
    const asleep = await waitFor(async () => {
      const summary = await summaryOf(agent.id);
      return summary.agent.turn_index > 0 && summary.phase === 'sleeping' ? summary : undefined;
    });
    expect(asleep.agent.status).toBe('asleep');
    expect(asleep.closure.runtime_posture).toBe('sleeping');
    // The decision itself is the last turn's: it completed.
    expect(asleep.closure.outcome).toBe('completed');
  });

  it('a sleeping agent with a timer says until when it sleeps; an awake one says null', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    const timer = await api.post<{ next_fire_at: string }>(`/api/control/agents/${agent.id}/timers`, { duration_ms: 3_600_000, summary: 'later' });
    expect(timer.status, timer.text).toBe(201);
    const asleep = await waitFor(async () => {
      const summary = await summaryOf(agent.id);
      return summary.agent.status === 'asleep' ? summary : undefined;
    });
    expect(asleep.agent.sleeping_until).toBe(timer.body.next_fire_at);
    const awake = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    expect(awake.agent.agent.sleeping_until).toBeNull();
  });

  it('an awake agent reports runtime_posture awake', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    expect((await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'hold' })).status).toBe(200);
    // The turn waits for a worker: the agent is awake, running it.
    const awake = await waitFor(async () => {
      const summary = await summaryOf(agent.id);
      return summary.agent.current_run_id !== null ? summary : undefined;
    });
    expect(awake.agent.status).toBe('awake_running');
    expect(awake.closure.runtime_posture).toBe('awake');
  });

  it('a stopped agent says why its phase is still active, and how to start it', async () => {
    const agent = await createAgent(api);
    const stop = await api.post<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expect(stop.status).toBe(200);
    expect(stop.body.agent.phase).toBe('active');
    expect(stop.body.agent.agent.status).toBe('stopped');
    expect(stop.body.agent.scheduling_posture.posture).toBe('stopped');
    expect(stop.body.agent.lifecycle.accepts_external_messages).toBe(false);
    expect(stop.body.agent.lifecycle.operator_hint).toContain('the lifecycle phase stays active, since Stop is a control and not a seed-002 phase');
    expect(stop.body.agent.lifecycle.operator_hint).toContain('{"action":"start"}');
    expect(stop.body).not.toHaveProperty('hint');
  });

  it('names phase and state_version once, and keeps the seed-000 field list', async () => {
    const agent = await createAgent(api);
    const summary = await summaryOf(agent.id);
    expect(keyCount(summary, 'phase')).toBe(1);
    expect(keyCount(summary, 'state_version')).toBe(1);
    for (const field of [
      'identity',
      'agent',
      'scheduling_posture',
      'lifecycle',
      'model',
      'token_usage',
      'closure',
      'execution',
      'active_children',
      'active_wait_conditions',
      'active_external_triggers',
    ]) {
      expect(summary, field).toHaveProperty(field);
    }
    expect(Object.keys(summary.agent).sort()).toEqual(['agent_id', 'current_run_id', 'last_continuation', 'pending', 'sleeping_until', 'status', 'turn_index']);
  });
});

describe('capability URLs after Stop / Start and on a replayed create', () => {
  it('Start says how to get a new trigger URL, and reset-callback gives one that works', async () => {
    const agent = await createAgent(api);
    expect((await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' })).status).toBe(200);
    const start = await api.post<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}/control`, { action: 'start' });
    expect(start.status).toBe(200);
    expect(start.body.agent.active_external_triggers).toEqual([]);
    expect(start.body.hint).toBe(
      `the agent has no active capability URL (Stop revoked them; Start does not restore them): POST /api/control/agents/${agent.id}/reset-callback for a new default trigger_url, shown once`,
    );
    const old = await call(server().base, 'POST', new URL(agent.triggerUrl).pathname, { raw: 'x', headers: { 'content-type': 'text/plain' } });
    expectError(old, 403, 'forbidden');
    const reset = await api.post<Wire<typeof TriggerCreatedResponse>>(`/api/control/agents/${agent.id}/reset-callback`);
    expect(reset.status).toBe(201);
    const fresh = await call(server().base, 'POST', new URL(reset.body.trigger_url ?? '').pathname, { raw: 'back again', headers: { 'content-type': 'text/plain' } });
    expect(fresh.status, fresh.text).toBe(200);
    // With a capability in place, Start has nothing to add.
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    await api.post(`/api/control/agents/${agent.id}/reset-callback`).then((r) => expect(r.status).toBe(409));
  });

  it('the replay of a create says the capability URL is shown only once and how to get another', async () => {
    const body = { agent_id: 'replayed-create', mission: 'once' };
    const first = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', body, { 'idempotency-key': 'once-key' });
    expect(first.body.external_trigger.trigger_url).toMatch(/\/callbacks\/wake\//);
    expect(first.body.external_trigger).not.toHaveProperty('note');
    const again = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', body, { 'idempotency-key': 'once-key' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.external_trigger.trigger_url).toBeUndefined();
    expect(again.body.external_trigger.note).toBe(
      'the capability URL is shown only once, in the first response to this create; POST /api/control/agents/replayed-create/reset-callback issues a new one (the old one stops working)',
    );
  });
});
