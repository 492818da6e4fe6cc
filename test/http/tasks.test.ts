import { describe, expect, it } from 'vitest';
import { TaskOutputResult } from '../../src/domain/index.js';
import { TaskInputResponse, TaskPage, TaskStatusResponse, TaskStatusView, TaskStopResponse } from '../../src/http/schemas.js';
import { call, createAgent, expectError, serverSession, settled, startServer, waitFor, type Wire } from './helpers.js';

const { api, server } = serverSession();

type Task = Wire<typeof TaskStatusView>;

// A task request right after creation can race the agent's first sleep (runtime: "tasks start only
// while active"), so tests start tasks on a settled (sleeping) agent, which the request wakes.
async function freshAgent() {
  const agent = await createAgent(api);
  await settled(api, agent.id);
  return agent;
}

async function exec(agentId: string, body: Record<string, unknown>): Promise<Task> {
  const reply = await api.post<Wire<typeof TaskStatusResponse>>(`/api/control/agents/${agentId}/tasks`, { summary: 'test task', ...body });
  expect(reply.status, reply.text).toBe(201);
  const task = TaskStatusResponse.parse(reply.body);
  expect(task.task_id).toBe(task.id);
  return task;
}

const finished = (agentId: string, taskId: string): Promise<Task> =>
  waitFor(async () => {
    const reply = await api.get<Task>(`/api/agents/${agentId}/tasks/${taskId}`);
    return ['completed', 'failed', 'cancelled', 'interrupted'].includes(reply.body.status) ? reply.body : undefined;
  });

describe('command tasks', () => {
  it('runs a command; status, output and artifact report it', async () => {
    const agent = await freshAgent();
    const task = await exec(agent.id, { cmd: 'printf "hello\\nworld\\n"' });
    expect(task).toMatchObject({ kind: 'command_task', agent_id: agent.id, cmd: 'printf "hello\\nworld\\n"' });
    const done = await finished(agent.id, task.id);
    expect(done).toMatchObject({ status: 'completed', exit_code: 0 });
    const output = await api.get(`/api/agents/${agent.id}/tasks/${task.id}/output?max_bytes=5`);
    expect(output.status, output.text).toBe(200);
    const result = TaskOutputResult.parse(output.body);
    expect(result).toMatchObject({ task_id: task.id, status: 'completed', truncated: true, output_bytes: 12 });
    expect(result.output_preview.length).toBeLessThanOrEqual(5);
    const artifact = await call(server().base, 'GET', `/api/agents/${agent.id}/tasks/${task.id}/artifact`);
    expect(artifact.status).toBe(200);
    expect(artifact.headers.get('content-type')).toContain('application/octet-stream');
    expect(artifact.text).toBe('hello\nworld\n');
  });

  it('lists only non-terminal tasks', async () => {
    const agent = await freshAgent();
    const long = await exec(agent.id, { cmd: 'sleep 20' });
    const short = await exec(agent.id, { cmd: 'true' });
    await finished(agent.id, short.id);
    const list = await api.get<Wire<typeof TaskPage>>(`/api/agents/${agent.id}/tasks`);
    expect(list.status).toBe(200);
    expect(TaskPage.parse(list.body).items.map((t) => t.task_id)).toEqual([long.id]);
    const stop = await api.post<Wire<typeof TaskStopResponse>>(`/api/control/agents/${agent.id}/tasks/${long.id}/stop`);
    expect(stop.status, stop.text).toBe(200);
    expect(TaskStopResponse.parse(stop.body).stop_requested).toBe(true);
    expect((await finished(agent.id, long.id)).status).toBe('cancelled');
    const again = await api.post(`/api/control/agents/${agent.id}/tasks/${long.id}/stop`);
    expect(again.status).toBe(200);
  });

  it('writes stdin to a task that accepts input, else 409 task_not_accepting_input', async () => {
    const agent = await freshAgent();
    const reader = await exec(agent.id, { cmd: 'read line; echo "got:$line"', accepts_input: true });
    await waitFor(async () => (await api.get<Task>(`/api/agents/${agent.id}/tasks/${reader.id}`)).body.status === 'running');
    const input = await api.post<Wire<typeof TaskInputResponse>>(`/api/control/agents/${agent.id}/tasks/${reader.id}/input`, { text: 'ping\n' });
    expect(input.status, input.text).toBe(200);
    expect(TaskInputResponse.parse(input.body)).toMatchObject({ accepted_input: true, bytes_written: 5 });
    await finished(agent.id, reader.id);
    const artifact = await call(server().base, 'GET', `/api/agents/${agent.id}/tasks/${reader.id}/artifact`);
    expect(artifact.text).toContain('got:ping');

    const deaf = await exec(agent.id, { cmd: 'sleep 20' });
    expectError(await api.post(`/api/control/agents/${agent.id}/tasks/${deaf.id}/input`, { text: 'x' }), 409, 'task_not_accepting_input');
    await api.post(`/api/control/agents/${agent.id}/tasks/${deaf.id}/stop`);
  });

  it('blocks for output up to timeout_ms when block=true', async () => {
    const agent = await freshAgent();
    const task = await exec(agent.id, { cmd: 'sleep 20' });
    await waitFor(async () => (await api.get<Task>(`/api/agents/${agent.id}/tasks/${task.id}`)).body.status === 'running');
    const output = await api.get<TaskOutputResult>(`/api/agents/${agent.id}/tasks/${task.id}/output?block=true&timeout_ms=50`);
    expect(output.status, output.text).toBe(200);
    expect(output.body.retrieval_status).toBe('timeout');
    await api.post(`/api/control/agents/${agent.id}/tasks/${task.id}/stop`);
  });

  it('answers 400 for invalid tasks and queries, 404 for unknown tasks and agents, 409 for a stopped agent', async () => {
    const agent = await freshAgent();
    const path = `/api/control/agents/${agent.id}/tasks`;
    expectError(await api.post(path, { summary: 's', cmd: '  ' }), 400, 'invalid_request');
    expectError(await api.post(path, { summary: 's', cmd: 'true', shell: 'bash' }), 400, 'invalid_request');
    expectError(await api.post(path, { summary: 's', cmd: 'true', env: { 'BAD-NAME': 'x' } }), 400, 'invalid_request');
    expectError(await api.get(`/api/agents/${agent.id}/tasks/task_missing`), 404, 'task_not_found');
    expectError(await api.get(`/api/agents/${agent.id}/tasks/task_missing/output`), 404, 'task_not_found');
    expectError(await api.get(`/api/agents/${agent.id}/tasks/task_missing/artifact`), 404, 'task_not_found');
    expectError(await api.post(`${path}/task_missing/input`, { text: 'x' }), 404, 'task_not_found');
    expectError(await api.post(`${path}/task_missing/stop`), 404, 'task_not_found');
    expectError(await api.get(`/api/agents/${agent.id}/tasks/t/output?block=maybe`), 400, 'invalid_request');
    expectError(await api.get(`/api/agents/${agent.id}/tasks/t/output?timeout_ms=999999999`), 400, 'invalid_request');
    expectError(await api.post('/api/control/agents/nobody/tasks', { summary: 's', cmd: 'true' }), 404, 'agent_not_found');
    await api.post(`/api/control/agents/${agent.id}/control`, { action: 'stop' });
    expectError(await api.post(path, { summary: 's', cmd: 'true' }), 409, 'agent_stopped');
  });
});

describe('a queued command task (maxRunningTasks reached)', () => {
  it('stays queued, TaskOutput(block=true) waits on it like on a running task, and it starts when a slot frees', async () => {
    const own = await startServer({ runtime: { maxRunningTasks: 1 } });
    const ownApi = {
      get: <T>(path: string) => call<T>(own.base, 'GET', path),
      post: <T>(path: string, json?: unknown) => call<T>(own.base, 'POST', path, json === undefined ? {} : { json }),
    };
    try {
      const created = await ownApi.post<{ identity: { agent_id: string } }>('/api/control/agents', {});
      const agentId = created.body.identity.agent_id;
      await waitFor(async () => (await ownApi.get<{ phase: string }>(`/api/agents/${agentId}/status`)).body.phase === 'sleeping');
      const first = (await ownApi.post<Task>(`/api/control/agents/${agentId}/tasks`, { summary: 'holds the slot', cmd: 'sleep 30' })).body;
      const second = (await ownApi.post<Task>(`/api/control/agents/${agentId}/tasks`, { summary: 'waits for it', cmd: 'echo second' })).body;
      await waitFor(async () => (await ownApi.get<Task>(`/api/agents/${agentId}/tasks/${first.id}`)).body.status === 'running');
      expect((await ownApi.get<Task>(`/api/agents/${agentId}/tasks/${second.id}`)).body.status).toBe('queued');
      const outputPath = `/api/agents/${agentId}/tasks/${second.id}/output`;
      // Not blocking: a queued task is not ready.
      expect((await ownApi.get<TaskOutputResult>(outputPath)).body).toMatchObject({ status: 'queued', retrieval_status: 'not_ready', output_preview: '' });
      // Blocking with a short bound: it waits the bound out and says so.
      expect((await ownApi.get<TaskOutputResult>(`${outputPath}?block=true&timeout_ms=200`)).body).toMatchObject({ status: 'queued', retrieval_status: 'timeout' });
      // Blocking with room: it answers once the task started and wrote, after the slot was freed.
      const blocked = ownApi.get<TaskOutputResult>(`${outputPath}?block=true&timeout_ms=20000`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await ownApi.get<Task>(`/api/agents/${agentId}/tasks/${second.id}`)).body.status).toBe('queued');
      expect((await ownApi.post(`/api/control/agents/${agentId}/tasks/${first.id}/stop`)).status).toBe(200);
      const output = await blocked;
      expect(output.status, output.text).toBe(200);
      expect(output.body.output_preview).toContain('second');
      expect(output.body.retrieval_status).not.toBe('timeout');
    } finally {
      await own.close();
    }
  });
});

describe('POST /api/control/agents/:id/invoke', () => {
  it('starts an actor invocation task backed by a child agent', async () => {
    const agent = await freshAgent();
    const reply = await api.post<Wire<typeof TaskStatusResponse>>(`/api/control/agents/${agent.id}/invoke`, { prompt: 'summarise', summary: 'delegate' });
    expect(reply.status, reply.text).toBe(201);
    const task = TaskStatusResponse.parse(reply.body);
    expect(task.kind).toBe('actor_invocation');
    expect(task.child_agent_id).toEqual(expect.any(String));
    const child = await api.get(`/api/agents/${String(task.child_agent_id)}/status`);
    expect(child.status).toBe(200);
  });

  it('answers 400, 403 (self-invocation) and 404', async () => {
    const agent = await freshAgent();
    const path = `/api/control/agents/${agent.id}/invoke`;
    expectError(await api.post(path, { prompt: 'x' }), 400, 'invalid_request');
    expectError(await api.post(path, { prompt: 'x', summary: 's', target_agent_id: agent.id }), 403, 'forbidden');
    expectError(await api.post(path, { prompt: 'x', summary: 's', target_agent_id: 'nobody' }), 404, 'agent_not_found');
  });
});
