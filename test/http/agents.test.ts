import { describe, expect, it } from 'vitest';
import { AgentStateView, AgentSummary, Snapshot } from '../../src/domain/index.js';
import {
  AbortRunResponse,
  AgentListPage,
  AgentResponse,
  CreateAgentResponse,
  SnapshotPage,
  SnapshotResponse,
  TransitionPage,
  TransitionResponse,
} from '../../src/http/schemas.js';
import { createAgent, expectError, serverSession, settled as settledAgent, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

const status = async (id: string): Promise<AgentSummary> => (await api.get<AgentSummary>(`/api/agents/${id}/status`)).body;
/** A fresh agent goes to sleep by itself once idle; tests needing a stable version wait for that. */
const settled = (id: string): Promise<AgentSummary> => settledAgent(api, id);

describe('POST /api/control/agents', () => {
  it('creates an active agent and shows its capability URL once', async () => {
    const reply = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', { agent_id: 'create-1', mission: 'watch' });
    expect(reply.status).toBe(201);
    const body = CreateAgentResponse.parse(reply.body);
    expect(body.identity).toMatchObject({ agent_id: 'create-1', mission: 'watch' });
    expect(body.phase).toBe('active');
    // The summary's fields at the top level: no `agent.agent`, and phase / state_version once each.
    expect(body.agent.status).toBe('awake_idle');
    expect(body.agent).not.toHaveProperty('phase');
    expect(body.agent).not.toHaveProperty('state_version');
    expect(body.lifecycle).not.toHaveProperty('phase');
    expect(reply.body).not.toHaveProperty('agent.agent');
    expect(body.external_trigger.delivery_mode).toBe('wake_hint');
    expect(body.external_trigger.trigger_url).toMatch(new RegExp(`^${server().base}/callbacks/wake/[A-Za-z0-9_-]{16,}$`));
    const token = String(body.external_trigger.trigger_url).split('/').pop() as string;
    const summary = await api.get(`/api/agents/create-1/status`);
    expect(summary.text).not.toContain(token);
    expect((summary.body as AgentSummary).active_external_triggers).toEqual([
      expect.objectContaining({ delivery_mode: 'wake_hint', status: 'active' }),
    ]);
  });

  it('replays a retried create with the same Idempotency-Key: one identity', async () => {
    const first = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', { mission: 'idem' }, { 'idempotency-key': 'create-key-1' });
    const again = await api.post<Wire<typeof CreateAgentResponse>>('/api/control/agents', { mission: 'idem' }, { 'idempotency-key': 'create-key-1' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(first.headers.get('idempotent-replay')).toBeNull();
    expect(again.body.identity.agent_id).toBe(first.body.identity.agent_id);
    // A replay never shows a URL without its token.
    const replayedUrl = CreateAgentResponse.parse(again.body).external_trigger.trigger_url;
    if (replayedUrl !== undefined) expect(replayedUrl).toBe(first.body.external_trigger.trigger_url);
    const conflict = await api.post('/api/control/agents', { mission: 'other' }, { 'idempotency-key': 'create-key-1' });
    expectError(conflict, 409, 'idempotency_conflict');
  });

  it('refuses an existing agent_id with 409 agent_exists', async () => {
    await createAgent(api, { agent_id: 'dup-1' });
    expectError(await api.post('/api/control/agents', { agent_id: 'dup-1' }), 409, 'agent_exists');
  });

  it('refuses unknown fields and bad ids with 400 invalid_request naming the paths', async () => {
    const unknown = await api.post('/api/control/agents', { agent_id: 'x-1', colour: 'red' });
    expectError(unknown, 400, 'invalid_request');
    expect(unknown.body).toMatchObject({ error: { details: { issues: [{ path: 'body', keys: ['colour'] }] } } });
    const badId = await api.post('/api/control/agents', { agent_id: '../etc' });
    expectError(badId, 400, 'invalid_request');
    expect(badId.body).toMatchObject({ error: { details: { issues: [{ path: 'body/agent_id' }] } } });
    expectError(await api.post('/api/control/agents', { mission: 'x' }, { 'idempotency-key': ' ' }), 400, 'invalid_request');
  });
});

describe('GET /api/agents/list', () => {
  it('pages the roster with limit and cursor', async () => {
    await createAgent(api, { agent_id: 'list-a' });
    await createAgent(api, { agent_id: 'list-b' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '?limit=1' : `?limit=1&cursor=${encodeURIComponent(cursor)}`;
      const reply = await api.get<Wire<typeof AgentListPage>>(`/api/agents/list${query}`);
      expect(reply.status).toBe(200);
      const page = AgentListPage.parse(reply.body);
      expect(page.items.length).toBeLessThanOrEqual(1);
      seen.push(...page.items.map((item) => item.agent_id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(expect.arrayContaining(['list-a', 'list-b']));
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('refuses out-of-range limits and unknown query fields', async () => {
    expectError(await api.get('/api/agents/list?limit=0'), 400, 'invalid_request');
    expectError(await api.get('/api/agents/list?limit=513'), 400, 'invalid_request');
    expectError(await api.get('/api/agents/list?colour=red'), 400, 'invalid_request');
  });
});

describe('GET /api/agents/:id/status and /state', () => {
  it('returns the AgentSummary and the bootstrap state', async () => {
    const agent = await createAgent(api);
    const summary = await api.get(`/api/agents/${agent.id}/status`);
    expect(summary.status).toBe(200);
    expect(AgentSummary.parse(summary.body).identity.agent_id).toBe(agent.id);
    const state = await api.get(`/api/agents/${agent.id}/state`);
    expect(state.status).toBe(200);
    const view = AgentStateView.parse(state.body);
    expect(view.summary.identity.agent_id).toBe(agent.id);
    expect(view.triggers).toHaveLength(1);
  });

  it('answers 404 agent_not_found for an unknown agent and 400 for a malformed id', async () => {
    expectError(await api.get('/api/agents/nobody/status'), 404, 'agent_not_found');
    expectError(await api.get('/api/agents/nobody/state'), 404, 'agent_not_found');
    expectError(await api.get('/api/agents/bad%20id/status'), 400, 'invalid_request');
  });
});

describe('POST /api/control/agents/:id/control', () => {
  it('stops and starts the agent', async () => {
    const agent = await createAgent(api);
    const stop = await api.post<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expect(stop.status).toBe(200);
    expect(stop.body.agent.agent.status).toBe('stopped');
    const start = await api.post<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}/control`, { action: 'start' });
    expect(start.status).toBe(200);
    expect(start.body.agent.agent.status).not.toBe('stopped');
  });

  it('enforces expected_version and If-Match with 409 version_conflict and the current version', async () => {
    const agent = await createAgent(api);
    const current = await settled(agent.id);
    const stale = current.state_version + 7;
    const byBody = await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop', expected_version: stale });
    expectError(byBody, 409, 'version_conflict');
    expect(byBody.body).toMatchObject({ error: { details: { current_version: current.state_version } } });
    const byHeader = await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' }, { 'if-match': `"${stale}"` });
    expectError(byHeader, 409, 'version_conflict');
    expect((await status(agent.id)).agent.status).not.toBe('stopped');
    const fresh = await api.post<Wire<typeof AgentResponse>>(
      `/api/control/agents/${agent.id}/control`,
      { action: 'stop' },
      { 'if-match': `"${current.state_version}"` },
    );
    expect(fresh.status).toBe(200);
    expect(fresh.body.agent.agent.status).toBe('stopped');
  });

  it('refuses a malformed If-Match, a disagreeing one, a bad action and an unknown agent', async () => {
    const agent = await createAgent(api);
    expectError(await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' }, { 'if-match': 'yesterday' }), 400, 'invalid_request');
    expectError(
      await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop', expected_version: 1 }, { 'if-match': '"2"' }),
      400,
      'invalid_request',
    );
    expectError(await api.post(`/api/control/agents/${agent.id}/control`, { action: 'pause' }), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/control', { action: 'stop' }), 404, 'agent_not_found');
  });
});

describe('transitions', () => {
  it('commits a requested transition once per transition_id and lists the reason chain', async () => {
    const agent = await createAgent(api);
    const asleep = await settled(agent.id);
    const request = { transition_id: 'wake-1', to: 'active', reason: 'operator wants it up', expected_version: asleep.state_version };
    const first = await api.post<Wire<typeof TransitionResponse>>(`/api/control/agents/${agent.id}/transitions`, request);
    expect(first.status, first.text).toBe(201);
    const record = TransitionResponse.parse(first.body);
    expect(record).toMatchObject({ transition_id: 'wake-1', from_phase: 'sleeping', reason: 'operator wants it up' });
    expect(record.phases.map((p) => p.phase)).toEqual([
      'transition_requested',
      'guard_checked',
      'transition_prepared',
      'side_effects_applied',
      'transition_committed',
    ]);
    const again = await api.post<Wire<typeof TransitionResponse>>(`/api/control/agents/${agent.id}/transitions`, request);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    expect(again.body.seq).toBe(record.seq);

    const chain = await api.get<Wire<typeof TransitionPage>>(`/api/agents/${agent.id}/transitions?limit=512`);
    expect(chain.status).toBe(200);
    const seqs = TransitionPage.parse(chain.body).items.map((t) => t.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(chain.body.items.filter((t) => t.transition_id === 'wake-1')).toHaveLength(1);
    const after = await api.get<Wire<typeof TransitionPage>>(`/api/agents/${agent.id}/transitions?after_seq=${record.seq - 1}&limit=1`);
    expect(after.body.items.map((t) => t.seq)).toEqual([record.seq]);
    expect(after.body.next_cursor).toBe(String(record.seq));
  });

  it('takes expected_version from If-Match', async () => {
    const agent = await createAgent(api);
    const asleep = await settled(agent.id);
    const reply = await api.post(
      `/api/control/agents/${agent.id}/transitions`,
      { transition_id: 'wake-h', to: 'active', reason: 'header version' },
      { 'if-match': `"${asleep.state_version}"` },
    );
    expect(reply.status, reply.text).toBe(201);
  });

  it('answers 409 illegal_transition, 409 version_conflict, 422 guard_rejected and 400 without a version', async () => {
    const agent = await createAgent(api);
    const asleep = await settled(agent.id);
    const path = `/api/control/agents/${agent.id}/transitions`;
    expectError(
      await api.post(path, { transition_id: 'ill-1', to: 'sleeping', reason: 'again', expected_version: asleep.state_version }),
      409,
      'illegal_transition',
    );
    expectError(
      await api.post(path, { transition_id: 'old-1', to: 'active', reason: 'stale', expected_version: asleep.state_version + 5 }),
      409,
      'version_conflict',
    );
    expectError(await api.post(path, { transition_id: 'nov-1', to: 'active', reason: 'no version' }), 400, 'invalid_request');
    expectError(await api.post(path, { transition_id: 'bad-1', to: 'paused', reason: 'x', expected_version: 1 }), 400, 'invalid_request');

    // A running task keeps the agent awake: the canSleep guard refuses.
    const task = await api.post(`/api/control/agents/${agent.id}/tasks`, { summary: 'hold', cmd: 'sleep 20' });
    expect(task.status, task.text).toBe(201);
    const awake = await waitFor(async () => {
      const summary = await status(agent.id);
      return summary.statechart['agent'] && JSON.stringify(summary.statechart['agent']).includes('awakeIdle') ? summary : undefined;
    });
    const refused = await api.post(path, { transition_id: 'nap-1', to: 'sleeping', reason: 'nap', expected_version: awake.state_version });
    expectError(refused, 422, 'guard_rejected');
    expect(refused.body).toMatchObject({ error: { details: { guard: 'canSleep' } } });
    await api.post(`/api/control/agents/${agent.id}/tasks/${String((task.body as { id: string }).id)}/stop`);
  });
});

describe('snapshots', () => {
  it('takes, lists and reads recovery snapshots', async () => {
    const agent = await createAgent(api);
    const taken = await api.post<Wire<typeof SnapshotResponse>>(`/api/control/agents/${agent.id}/snapshots`);
    expect(taken.status, taken.text).toBe(201);
    const snapshot = SnapshotResponse.parse(taken.body);
    expect(snapshot.kind).toBe('on_request');
    expect(snapshot.recovery.checksum).toMatch(/^[0-9a-f]{64}$/);
    const list = await api.get<Wire<typeof SnapshotPage>>(`/api/agents/${agent.id}/snapshots`);
    expect(list.status).toBe(200);
    expect(SnapshotPage.parse(list.body).items.map((s) => s.snapshot_id)).toContain(snapshot.snapshot_id);
    const one = await api.get(`/api/agents/${agent.id}/snapshots/${snapshot.snapshot_id}`);
    expect(one.status).toBe(200);
    expect(Snapshot.parse(one.body).snapshot_id).toBe(snapshot.snapshot_id);
  });

  it('answers 404 snapshot_not_found and 400 for a body on the take route', async () => {
    const agent = await createAgent(api);
    expectError(await api.get(`/api/agents/${agent.id}/snapshots/snap_missing`), 404, 'snapshot_not_found');
    expectError(await api.post(`/api/control/agents/${agent.id}/snapshots`, { kind: 'archive' }), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/snapshots'), 404, 'agent_not_found');
  });
});

describe('POST /api/control/agents/:id/current-run/abort', () => {
  it('answers 409 no_current_run without a run, 409 stale_run_id for another run, and aborts the current one', async () => {
    const agent = await createAgent(api, { config: { turn_runner: 'http_worker' } });
    await settled(agent.id);
    expectError(await api.post(`/api/control/agents/${agent.id}/current-run/abort`, {}), 409, 'no_current_run');
    await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'work' });
    const running = await waitFor(async () => {
      const summary = await status(agent.id);
      return summary.agent.current_run_id ? summary : undefined;
    });
    expectError(await api.post(`/api/control/agents/${agent.id}/current-run/abort`, { run_id: 'run_other' }), 409, 'stale_run_id');
    const aborted = await api.post<Wire<typeof AbortRunResponse>>(`/api/control/agents/${agent.id}/current-run/abort`);
    expect(aborted.status, aborted.text).toBe(200);
    expect(AbortRunResponse.parse(aborted.body)).toMatchObject({ aborted: true, run_id: running.agent.current_run_id });
    expect((await status(agent.id)).agent.current_run_id).toBeNull();
  });
});

describe('DELETE /api/control/agents/:id', () => {
  it('terminates idempotently; afterwards mutating routes answer 409 agent_terminated', async () => {
    const agent = await createAgent(api);
    const first = await api.delete<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}`);
    expect(first.status, first.text).toBe(200);
    expect(first.body.agent.phase).toBe('terminated');
    const again = await api.delete<Wire<typeof AgentResponse>>(`/api/control/agents/${agent.id}`);
    expect(again.status).toBe(200);
    expect(again.body.agent.phase).toBe('terminated');
    expectError(await api.post(`/api/control/agents/${agent.id}/wake`, { reason: 'hello?' }), 409, 'agent_terminated');
    expectError(await api.post(`/api/control/agents/${agent.id}/prompt`, { text: 'hello?' }), 409, 'agent_terminated');
    expectError(await api.delete('/api/control/agents/nobody'), 404, 'agent_not_found');
  });
});
