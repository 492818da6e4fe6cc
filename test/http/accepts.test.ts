import { describe, expect, it } from 'vitest';
import { StateAccepts, type AcceptedControl } from '../../src/domain/index.js';
import { createAgent, expectError, serverSession, settled } from './helpers.js';

const { api } = serverSession();

async function accepts(id: string): Promise<StateAccepts> {
  const reply = await api.get(`/api/agents/${id}/accepts`);
  expect(reply.status, reply.text).toBe(200);
  return StateAccepts.parse(reply.body);
}

const summaryOf = (events: AcceptedControl[]) => Object.fromEntries(events.map((e) => [e.event, e.leads_to]));

describe('GET /api/agents/:id/accepts', () => {
  it('an agent asleep accepts a wake, Stop, Terminate and Recover, each with its requests and body schemas', async () => {
    await createAgent(api, { agent_id: 'acc-1' });
    await settled(api, 'acc-1');
    const view = await accepts('acc-1');
    expect(view).toMatchObject({ agent_id: 'acc-1', state: 'sleeping', phase: 'sleeping', status: 'asleep' });
    expect(summaryOf(view.accepts)).toEqual({ WAKE: 'waking', STOP: 'stopped', TERMINATE: 'terminating', RECOVER: 'recovering' });
    const terminate = view.accepts.find((e) => e.event === 'TERMINATE');
    expect(terminate?.requests.map((r) => `${r.method} ${r.path} ${r.body === null ? '' : (r.body as { to?: string }).to ?? ''}`.trim())).toEqual([
      'DELETE /api/control/agents/acc-1',
      'POST /api/control/agents/acc-1/transitions terminating',
      'POST /api/control/agents/acc-1/transitions terminated',
    ]);
    const wake = view.accepts.find((e) => e.event === 'WAKE');
    expect(wake?.requests.map((r) => (r.body as { to: string }).to)).toEqual(['waking', 'active']);
    // POST routes carry the JSON Schema of their body; DELETE has none.
    expect(wake?.requests[0]?.schema).toMatchObject({ type: 'object', required: expect.arrayContaining(['transition_id', 'to', 'reason', 'expected_version']) });
    expect(terminate?.requests[0]?.schema).toBeNull();
    expect((wake?.requests[0]?.body as { expected_version: number }).expected_version).toBe(view.state_version);
  });

  it('the listed request does what it says: Stop, then Start leads a stopped-asleep agent back to sleep', async () => {
    await createAgent(api, { agent_id: 'acc-2' });
    await settled(api, 'acc-2');
    const stop = (await accepts('acc-2')).accepts.find((e) => e.event === 'STOP')?.requests[0];
    expect(stop).toMatchObject({ method: 'POST', path: '/api/control/agents/acc-2/control', body: { action: 'stop' } });
    const stopped = await api.post(stop?.path as string, stop?.body);
    expect(stopped.status, stopped.text).toBe(200);
    const view = await accepts('acc-2');
    expect(view).toMatchObject({ state: 'stopped', status: 'stopped' });
    expect(summaryOf(view.accepts)).toEqual({ START: 'sleeping', TERMINATE: 'terminating', RECOVER: 'recovering' });
    expect(view.accepts.find((e) => e.event === 'START')?.requests.map((r) => r.path)).toEqual(['/api/control/agents/acc-2/control', '/api/control/agents/acc-2/transitions', '/api/control/agents/acc-2/transitions']);
  });

  it('a terminated agent accepts nothing', async () => {
    await createAgent(api, { agent_id: 'acc-3' });
    expect((await api.delete('/api/control/agents/acc-3')).status).toBe(200);
    expect((await accepts('acc-3')).accepts).toEqual([]);
  });

  it('an unknown agent answers 404', async () => {
    expectError(await api.get('/api/agents/nobody-here/accepts'), 404, 'agent_not_found');
  });
});

describe('a control request the state refuses answers 409 with what it accepts in details.allowed', () => {
  it('a transition the state has no edge for (asleep → evolving)', async () => {
    await createAgent(api, { agent_id: 'acc-4' });
    const asleep = await settled(api, 'acc-4');
    const reply = await api.post('/api/control/agents/acc-4/transitions', { transition_id: 'acc-4-evolve', to: 'evolving', reason: 'try', expected_version: asleep.state_version });
    expectError(reply, 409, 'illegal_transition');
    const details = (reply.body as { error: { details: { allowed: AcceptedControl[]; state: string; from: string; to: string } } }).error.details;
    expect(details).toMatchObject({ state: 'sleeping', from: 'sleeping', to: 'evolving' });
    // The same events as GET .../accepts, without the schemas.
    const view = await accepts('acc-4');
    expect(details.allowed).toEqual(view.accepts.map((e) => ({ ...e, requests: e.requests.map(({ schema: _schema, ...rest }) => rest) })));
    expect(details.allowed.map((e) => e.event)).toEqual(['STOP', 'TERMINATE', 'WAKE', 'RECOVER']);
  });

  it('aborting a run the agent does not have', async () => {
    await createAgent(api, { agent_id: 'acc-5' });
    await settled(api, 'acc-5');
    const reply = await api.post('/api/control/agents/acc-5/current-run/abort', {});
    expectError(reply, 409, 'no_current_run');
    const allowed = (reply.body as { error: { details: { allowed: AcceptedControl[] } } }).error.details.allowed;
    expect(allowed.map((e) => e.event)).not.toContain('TURN.ABORT');
    expect(allowed.map((e) => e.event)).toContain('STOP');
  });

  it('a transition refused while stopped (after a recovery and a Stop) lists Start, Terminate and Recover', async () => {
    await createAgent(api, { agent_id: 'acc-6' });
    const asleep = await settled(api, 'acc-6');
    const recover = await api.post('/api/control/agents/acc-6/transitions', { transition_id: 'acc-6-recover', to: 'recovering', reason: 'check', expected_version: asleep.state_version });
    expect(recover.status, recover.text).toBe(201);
    // Recovery verifies and returns to Active at once; the agent then falls asleep again.
    const again = await settled(api, 'acc-6');
    const stopped = await api.post('/api/control/agents/acc-6/control', { action: 'stop' });
    expect(stopped.status).toBe(200);
    const evolve = await api.post('/api/control/agents/acc-6/transitions', { transition_id: 'acc-6-evolve', to: 'evolving', reason: 'try', expected_version: again.state_version + 1 });
    expectError(evolve, 409, 'illegal_transition');
    expect((evolve.body as { error: { details: { allowed: AcceptedControl[] } } }).error.details.allowed.map((e) => e.event)).toEqual(['START', 'TERMINATE', 'RECOVER']);
  });
});

describe('the OpenAPI document', () => {
  it('documents GET /api/agents/{id}/accepts with the StateAccepts schema', async () => {
    const doc = (await api.get('/openapi.json')).body as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>>; components: { schemas: Record<string, unknown> } };
    const route = doc.paths['/api/agents/{id}/accepts']?.['get'];
    expect(route?.responses['200']?.content['application/json']?.schema).toEqual({ $ref: '#/components/schemas/StateAccepts' });
    expect(doc.components.schemas['StateAccepts']).toMatchObject({ type: 'object', required: expect.arrayContaining(['agent_id', 'state', 'accepts']) });
  });
});
