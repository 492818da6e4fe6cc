import { afterEach, describe, expect, it } from 'vitest';
import { testDatabase } from '../pg/shared-cluster.js';
import { client } from '../http/helpers.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';

/**
 * Issue 19: turn workers claim from any node. An agent with `turn_runner: http_worker` is held by
 * node 1 (its offer lives there); a worker that talks only to node 2 claims the turn, heartbeats
 * (a safe point taking an operator prompt queued mid-turn) and completes it, on real `serve`
 * processes sharing one throwaway PostgreSQL database.
 */
const sets: NodeSet[] = [];
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});

interface Claim {
  agent_id: string;
  run_id: string;
  claim_id: string;
  messages: Array<{ id: string }>;
}

const db = await testDatabase('cluster_turn_workers');

if (db === null) {
  describe.skip('cluster turn workers (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('cluster: turn workers claim from any node', () => {
    it("a worker polling node 2 claims, heartbeats and completes the turn of an agent node 1 holds", async () => {
      const set = await startNodes({ storeUrl: db.url, count: 2, args: ['--lease-ttl-ms', '3000'] });
      sets.push(set);
      const [n1, n2] = set.nodes as [ClusterNode, ClusterNode];
      await Promise.all([n1.listening(), n2.listening()]);
      const a1 = client(n1.url);
      const worker = client(n2.url);
      const created = await a1.post('/api/control/agents', { agent_id: 'tw-1', config: { turn_runner: 'http_worker' } });
      expect(created.status, created.text).toBe(201);
      const prompted = await a1.post<{ message_id: string }>('/api/control/agents/tw-1/prompt', { text: 'please work' });
      expect(prompted.status, prompted.text).toBe(200);
      const ready = await a1.get<{ node?: { agent_leases_held: number } }>('/readyz');
      expect(ready.body.node?.agent_leases_held).toBe(1);

      // Node 2 has no offer of its own: it asks node 1, which grants the turn.
      const claimed = await worker.post<Claim>('/api/control/turns/claim', { agent_ids: ['tw-1'], wait_ms: 5_000 });
      expect(claimed.status, claimed.text).toBe(200);
      expect(claimed.body.agent_id).toBe('tw-1');
      expect(claimed.body.messages.map((m) => m.id)).toEqual([prompted.body.message_id]);
      const path = `/api/control/turns/${encodeURIComponent(claimed.body.run_id)}`;

      // Nothing else is offered anywhere: a second claim through node 2 finds none.
      expect((await worker.post('/api/control/turns/claim', { agent_ids: ['tw-1'], wait_ms: 600 })).status).toBe(204);

      const interjection = await a1.post<{ message_id: string }>('/api/control/agents/tw-1/prompt', { text: 'and one more thing' });
      expect(interjection.status, interjection.text).toBe(200);
      const beat = await worker.post<{ messages?: Array<{ id: string }> }>(`${path}/heartbeat`, { claim_id: claimed.body.claim_id, take_messages: true });
      expect(beat.status, beat.text).toBe(200);
      expect(beat.headers.get('x-holon-forwarded-by')).toBe('node-2');
      expect((beat.body.messages ?? []).map((m) => m.id)).toEqual([prompted.body.message_id, interjection.body.message_id]);
      // A wrong claim id is refused by the holder, through node 2.
      expect((await worker.post(`${path}/heartbeat`, { claim_id: 'claim_unknown' })).status).toBe(409);

      const done = await worker.post<{ applied: boolean }>(`${path}/complete`, { claim_id: claimed.body.claim_id, actions: [] }, { 'Idempotency-Key': 'tw-complete-1' });
      expect(done.status, done.text).toBe(200);
      expect(done.body.applied).toBe(true);
      const events = await a1.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>('/api/agents/tw-1/events?limit=512');
      expect(events.body.events.filter((e) => e.type === 'turn_finished').map((e) => e.payload['run_id'])).toEqual([claimed.body.run_id]);
      // Completed: heartbeats of the run are refused.
      expect((await worker.post(`${path}/heartbeat`, { claim_id: claimed.body.claim_id })).status).toBe(409);
    });
    it('the run id names its agent, so a third node routes the heartbeat and the complete to the holder', async () => {
      const set = await startNodes({ storeUrl: db.url, count: 3, args: ['--lease-ttl-ms', '3000'] });
      sets.push(set);
      const [n1, n2, n3] = set.nodes as [ClusterNode, ClusterNode, ClusterNode];
      await Promise.all([n1.listening(), n2.listening(), n3.listening()]);
      const holder = client(n1.url);
      const created = await holder.post('/api/control/agents', { agent_id: 'tw.third', config: { turn_runner: 'http_worker' } });
      expect(created.status, created.text).toBe(201);
      expect((await holder.post('/api/control/agents/tw.third/prompt', { text: 'work' })).status).toBe(200);

      const claimed = await client(n2.url).post<Claim>('/api/control/turns/claim', { agent_ids: ['tw.third'], wait_ms: 5_000 });
      expect(claimed.status, claimed.text).toBe(200);
      expect(claimed.body.run_id.endsWith('.tw.third')).toBe(true);
      const path = `/api/control/turns/${encodeURIComponent(claimed.body.run_id)}`;
      // Node 3 neither holds the agent nor relayed the claim: it forwards by the run id.
      const third = client(n3.url);
      const beat = await third.post<{ run_id: string }>(`${path}/heartbeat`, { claim_id: claimed.body.claim_id });
      expect(beat.status, beat.text).toBe(200);
      expect(beat.headers.get('x-holon-forwarded-by')).toBe('node-3');
      const done = await third.post<{ applied: boolean }>(`${path}/complete`, { claim_id: claimed.body.claim_id, actions: [] }, { 'Idempotency-Key': 'tw-third-complete' });
      expect(done.status, done.text).toBe(200);
      expect(done.body.applied).toBe(true);
      // The same complete again through the holder: answered once, applied once.
      const again = await holder.post<{ applied: boolean }>(`${path}/complete`, { claim_id: claimed.body.claim_id, actions: [] }, { 'Idempotency-Key': 'tw-third-complete' });
      expect(again.status, again.text).toBe(200);
      const events = await holder.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>('/api/agents/tw.third/events?limit=512');
      expect(events.body.events.filter((e) => e.type === 'turn_finished').map((e) => e.payload['run_id'])).toEqual([claimed.body.run_id]);
    });
  });
}
