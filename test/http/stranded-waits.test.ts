import { afterAll, describe, expect, it } from 'vitest';
import type { AgentSummary, Readiness, TaskRecord } from '../../src/domain/index.js';
import { createStore } from '../../src/store/index.js';
import { parseDoc } from '../../src/runtime/agent/agent-cell.js';
import { rosterOf } from '../../src/runtime/agent/roster.js';
import { createAgent, serverSession, settled, removeTempDirs, startServer, tempDir, waitFor, type Client } from './helpers.js';

const { api } = serverSession();

const summaryOf = async (client: Client, agentId: string) => (await client.get<AgentSummary>(`/api/agents/${agentId}/status`)).body;
const tasksOf = async (agentId: string) => (await api.get<{ tasks: TaskRecord[] }>(`/api/agents/${agentId}/state`)).body.tasks;
const eventsOf = async (agentId: string) => (await api.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(`/api/agents/${agentId}/events?limit=512`)).body.events;

describe('no agent is left waiting on something that can no longer happen', () => {
  afterAll(removeTempDirs);

  it('Stop during /exec-wait: the interrupted task ends its wait; after Start the agent goes on from the real facts', async () => {
    const agent = await createAgent(api);
    await settled(api, agent.id);
    expect((await api.post(`/api/control/agents/${agent.id}/prompt`, { text: '/exec-wait sleep 1000' })).status).toBe(200);
    const waiting = await waitFor(async () => {
      const summary = await summaryOf(api, agent.id);
      return summary.active_wait_conditions.length === 1 && summary.closure.outcome === 'waiting' ? summary : undefined;
    });
    expect(waiting.closure.waiting_reason).toBe('awaiting_task_result');
    const [task] = await tasksOf(agent.id);
    expect(waiting.active_wait_conditions[0]?.subject_ref).toBe(task?.id);

    expect((await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' })).status).toBe(200);
    const stopped = await summaryOf(api, agent.id);
    expect(stopped.active_wait_conditions).toEqual([]);
    expect(stopped.closure.outcome).not.toBe('waiting');
    expect(stopped.statechart['continuation']).toMatchObject({ wait: 'idle' });
    const interrupted = (await api.get<TaskRecord>(`/api/agents/${agent.id}/tasks/${task?.id}`)).body;
    expect(interrupted).toMatchObject({ status: 'interrupted', reason: 'agent_stopped' });
    expect((await eventsOf(agent.id)).filter((e) => e.type === 'wait_resolved').map((e) => e.payload['reason'])).toEqual(['task_ended_without_result']);

    expect((await api.post(`/api/control/agents/${agent.id}/control`, { action: 'start' })).status).toBe(200);
    await settled(api, agent.id);
    const turns = (await eventsOf(agent.id)).filter((e) => e.type === 'turn_finished').length;
    const accepted = await api.post<{ message_id: string }>(`/api/control/agents/${agent.id}/prompt`, { text: 'are you there?' });
    expect(accepted.status).toBe(200);
    await waitFor(async () => (await eventsOf(agent.id)).filter((e) => e.type === 'turn_finished').length > turns);
    const after = await settled(api, agent.id);
    expect(after.closure.outcome).toBe('completed');
    expect(after.active_wait_conditions).toEqual([]);
    expect(after.statechart['continuation']).toMatchObject({ wait: 'idle' });
    const ready = (await api.get<Readiness>('/readyz')).body;
    expect(ready.progress.stranded_agents.map((a) => a.agent_id)).not.toContain(agent.id);
  });

  it('cancelling a timer ends the wait on it', async () => {
    const agent = await createAgent(api);
    const timer = await api.post<{ id: string }>(`/api/control/agents/${agent.id}/timers`, { duration_ms: 3_600_000 });
    const wait = await api.post<{ id: string }>(`/api/control/agents/${agent.id}/waits`, { wake: 'timer', resource: timer.body.id, reason: 'an hour' });
    expect([timer.status, wait.status]).toEqual([201, 201]);
    expect((await api.post(`/api/control/agents/${agent.id}/timers/${timer.body.id}/cancel`)).status).toBe(200);
    expect((await summaryOf(api, agent.id)).active_wait_conditions).toEqual([]);
    const cancelled = (await eventsOf(agent.id)).find((e) => e.type === 'wait_cancelled');
    expect(cancelled?.payload).toMatchObject({ wait_id: wait.body.id, reason: 'timer_cancelled' });
  });

  it('/readyz reports a stranded wait (written by an older version) once the agent is loaded', async () => {
    const dataDir = await tempDir();
    const first = await startServer({ dataDir });
    const created = await first.app.inject({ method: 'POST', url: '/api/control/agents', payload: { agent_id: 'stranded' } });
    expect(created.statusCode).toBe(201);
    await waitFor(async () => (await first.runtime.getSummary('stranded')).phase === 'sleeping');
    await first.close({ keepDataDir: true });

    // What a version with the bug left behind: a wait on a task that ended without a result.
    const store = createStore({ kind: 'lowdb', dataDir });
    await store.open();
    const lease = await store.acquireLease('test-writer', 10_000, new Date());
    const stored = await store.loadAgent('stranded');
    const doc = parseDoc(stored?.doc);
    const now = new Date().toISOString();
    doc.tasks = [...doc.tasks, { ...taskRecord('task_gone', now), status: 'interrupted', reason: 'agent_stopped' }];
    doc.waits = [...doc.waits, { id: 'wait_stranded', agent_id: 'stranded', work_item_id: null, status: 'active', kind: 'task', subject_ref: 'task_gone', waiting_for: 'the task', wake_at: null, created_at: now, updated_at: now, resolved_at: null, trigger_message_id: null }];
    const { stranded: _derived, ...oldEntry } = rosterOf(doc);
    await store.commit({ agent_id: 'stranded', expected_version: stored?.version ?? 0, doc, events: [], fencing_token: lease.fencing_token, roster: oldEntry });
    await store.releaseLease(lease);
    await store.close();

    const second = await startServer({ dataDir, runtime: { leaseWaitMs: 5_000 } });
    try {
      const before = await second.app.inject({ method: 'GET', url: '/readyz' });
      expect((JSON.parse(before.body) as Readiness).progress.stranded_agents).toEqual([]);
      expect((await second.app.inject({ method: 'GET', url: '/api/agents/stranded/status' })).statusCode).toBe(200);
      const after = JSON.parse((await second.app.inject({ method: 'GET', url: '/readyz' })).body) as Readiness;
      expect(after.progress.stranded_agents).toEqual([{ agent_id: 'stranded', waits: [{ wait_id: 'wait_stranded', reason: 'task_ended' }] }]);
    } finally {
      await second.close();
    }
  });
});

function taskRecord(id: string, at: string): TaskRecord {
  return {
    id,
    agent_id: 'stranded',
    kind: 'command_task',
    status: 'queued',
    summary: 'gone',
    created_at: at,
    updated_at: at,
    work_item_id: null,
    parent_run_id: null,
    accepts_input: false,
    cmd: 'true',
    workdir: null,
    timeout_ms: null,
    exit_code: null,
    reason: null,
    child_agent_id: null,
    output_bytes: 0,
    result_text: null,
  };
}
