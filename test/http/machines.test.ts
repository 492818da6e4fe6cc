import { describe, expect, it } from 'vitest';
import { ActorNode } from '../../src/domain/index.js';
import { MachineDetail, MachineList } from '../../src/http/schemas.js';
import { machines } from '../../machines/index.js';
import { createAgent, expectError, serverSession, type Wire } from './helpers.js';

const { api, server } = serverSession();

describe('statecharts', () => {
  it('lists every machine with state and transition counts', async () => {
    const reply = await api.get<Wire<typeof MachineList>>('/api/machines');
    expect(reply.status).toBe(200);
    const list = MachineList.parse(reply.body);
    expect(list.items.map((m) => m.name).sort()).toEqual(Object.keys(machines).sort());
    const agent = list.items.find((m) => m.name === 'agent');
    expect(agent?.states).toBeGreaterThan(5);
    expect(agent?.transitions).toBeGreaterThan(agent?.states ?? 0);
  });

  it("returns a machine's XState definition and Mermaid text", async () => {
    const reply = await api.get<Wire<typeof MachineDetail>>('/api/machines/agent');
    expect(reply.status).toBe(200);
    const detail = MachineDetail.parse(reply.body);
    expect(detail.definition).toMatchObject({ id: 'agent', states: expect.objectContaining({ sleeping: expect.any(Object) }) });
    expect(detail.mermaid.startsWith('stateDiagram-v2')).toBe(true);
    expect(detail.mermaid).toContain('sleeping');
    const list = await api.get<Wire<typeof MachineList>>('/api/machines');
    expect(list.body.items.find((m) => m.name === 'agent')).toEqual({ name: 'agent', states: detail.states, transitions: detail.transitions });
  });

  it('answers 404 machine_not_found for an unknown machine', async () => {
    expectError(await api.get('/api/machines/toaster'), 404, 'machine_not_found');
  });

  it("returns an agent's live actor tree", async () => {
    const agent = await createAgent(api);
    const reply = await api.get(`/api/agents/${agent.id}/actors`);
    expect(reply.status).toBe(200);
    const tree = ActorNode.parse(reply.body);
    expect(tree).toMatchObject({ id: `agent:${agent.id}`, machine: 'agent' });
    expect(tree.children.map((c) => c.machine)).toContain('continuation');
    expectError(await api.get('/api/agents/nobody/actors'), 404, 'agent_not_found');
  });
});
