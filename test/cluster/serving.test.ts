import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../pg/shared-cluster.js';
import { call, client, openStream, waitFor } from '../http/helpers.js';
import { checkCluster, type Acknowledged } from './checker.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';
import { readClusterFacts } from './read-facts.js';

/**
 * Issue 19 on real `serve` processes sharing one throwaway PostgreSQL database: any node serves
 * any agent (forwarding to the holder), and failover (acceptance #2): the owner of a busy agent
 * is SIGKILLed and another node serves it once the lease ran out, having recovered what the dead
 * node left in doubt (its running command becomes `interrupted`, never run again).
 */
const TTL_MS = 3_000;
let counter = 0;
const sets: NodeSet[] = [];
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});

async function freshDatabase(): Promise<TestDatabase | null> {
  counter += 1;
  return testDatabase(`cluster_serving_${counter}`);
}

const connectionOf = (db: TestDatabase) => ({ host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database: db.name });

/** `count` nodes on `db` (a fresh database unless given), each listening, closed after the test. */
async function listeningNodes(count: number, given?: TestDatabase): Promise<{ db: TestDatabase; nodes: ClusterNode[] }> {
  const db = given ?? (await freshDatabase());
  if (!db) throw new Error('no database');
  const set = await startNodes({ storeUrl: db.url, count, args: ['--lease-ttl-ms', String(TTL_MS)] });
  sets.push(set);
  await Promise.all(set.nodes.map((node) => node.listening()));
  return { db, nodes: set.nodes };
}

interface ReadyNode {
  ok: boolean;
  node?: { node_id: string; agent_leases_held: number; live_nodes: number | null; heartbeat: { ok: boolean | null } };
}

const probe = await freshDatabase();

if (probe === null) {
  describe.skip('cluster serving (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('cluster: any node serves any agent, failover', () => {
    it('forwards a request for an agent another node holds, and every node reports its id, its leases and the database', async () => {
      const { db, nodes } = await listeningNodes(2, probe);
      const [n1, n2] = nodes as [ClusterNode, ClusterNode];
      const a1 = client(n1.url);
      const a2 = client(n2.url);
      const created = await a1.post<{ external_trigger: { trigger_url: string } }>('/api/control/agents', { agent_id: 'fw-1' });
      expect(created.status, created.text).toBe(201);
      // Listed through node 2 at once, from the database (a node keeps no roster of agents it does not run).
      const listed = await a2.get<{ items: Array<{ agent_id: string; status: string }>; next_cursor: string | null }>('/api/agents/list?q=FW-');
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body).toEqual({ items: [expect.objectContaining({ agent_id: 'fw-1', status: expect.any(String) })], next_cursor: null });
      // The capability URL through node 2, which never saw the token: the database's index of
      // trigger hashes finds the agent, and node 2 forwards the raw body to node 1.
      const capability = new URL(created.body.external_trigger.trigger_url).pathname;
      const woken = await call<{ agent_id: string; disposition: string }>(n2.url, 'POST', capability, { raw: 'ping from outside', headers: { 'content-type': 'text/plain' } });
      expect(woken.status, woken.text).toBe(200);
      expect(woken.body.agent_id).toBe('fw-1');
      expect(woken.headers.get('x-holon-forwarded-by')).toBe('node-2');

      // Through node 2: forwarded to node 1, which holds the agent.
      const prompted = await a2.post<{ message_id: string }>('/api/control/agents/fw-1/prompt', { text: 'through node 2' }, { 'Idempotency-Key': 'k-1' });
      expect(prompted.status, prompted.text).toBe(200);
      expect(prompted.headers.get('x-holon-forwarded-by')).toBe('node-2');
      // A capability minted through node 2 (by node 1, the holder) names node 2, the address the client used.
      const minted = await a2.post<{ trigger_url: string }>('/api/control/agents/fw-1/triggers', { delivery_mode: 'enqueue_message' });
      expect(minted.status, minted.text).toBe(201);
      expect(minted.headers.get('x-holon-forwarded-by')).toBe('node-2');
      expect(new URL(minted.body.trigger_url).host).toBe(new URL(n2.url).host);
      const spoofed = await a1.post<{ trigger_url: string }>('/api/control/agents/fw-1/triggers', { delivery_mode: 'wake_hint' }, { 'X-Holon-Forwarded-Host': 'evil.example' });
      expect(new URL(spoofed.body.trigger_url).host).toBe(new URL(n1.url).host);
      // The retry through the other node is the same operation: the key lives with the agent.
      const retried = await a1.post<{ message_id: string }>('/api/control/agents/fw-1/prompt', { text: 'through node 2' }, { 'Idempotency-Key': 'k-1' });
      expect(retried.body.message_id).toBe(prompted.body.message_id);
      const status = await a2.get<{ identity: { agent_id: string } }>('/api/agents/fw-1/status');
      expect(status.status, status.text).toBe(200);
      expect(status.body.identity.agent_id).toBe('fw-1');
      // The agent's SSE stream through node 2, resumed after its second event: relayed as a stream,
      // live events included.
      const stream = await openStream(n2.url, '/api/agents/fw-1/events/stream', { 'Last-Event-ID': '2' });
      try {
        const resumed = await stream.next(10_000);
        expect(resumed?.id).toBe('3');
        const live = await a2.post<{ message_id: string }>('/api/control/agents/fw-1/prompt', { text: 'live, through node 2' });
        for (;;) {
          const event = await stream.next(10_000);
          if (event === null) throw new Error('the stream ended');
          if (event.event === 'message_queued' && event.data.includes(live.body.message_id)) break;
        }
      } finally {
        await stream.close();
      }

      // A create retried through another node with its Idempotency-Key is the same create.
      const keyed = await a2.post<{ identity: { agent_id: string } }>('/api/control/agents', {}, { 'Idempotency-Key': 'create-1' });
      expect(keyed.status, keyed.text).toBe(201);
      const again = await a1.post<{ identity: { agent_id: string } }>('/api/control/agents', {}, { 'Idempotency-Key': 'create-1' });
      expect(again.status, again.text).toBe(201);
      expect(again.body.identity.agent_id).toBe(keyed.body.identity.agent_id);
      expect(again.headers.get('idempotent-replay')).toBe('true');
      expect(again.headers.get('x-holon-forwarded-by')).toBe('node-1');
      // An unknown agent is 404 through either node.
      expect((await a2.get('/api/agents/nobody/status')).status).toBe(404);

      const r1 = await a1.get<ReadyNode>('/readyz');
      const r2 = await a2.get<ReadyNode>('/readyz');
      expect(r1.status, r1.text).toBe(200);
      expect(r1.body.node).toMatchObject({ node_id: 'node-1', live_nodes: 2, heartbeat: { ok: true } });
      // Each holds the agent created through it; a lookup of an unknown agent leaves no lease.
      expect(r1.body.node?.agent_leases_held).toBe(1);
      expect(r2.body.node).toMatchObject({ node_id: 'node-2', agent_leases_held: 1, live_nodes: 2 });

      // A request already forwarded once is never forwarded again: 503, retryable.
      const twice = await a2.get<{ error: { code: string; retryable: boolean } }>('/api/agents/fw-1/status', { 'X-Holon-Forwarded-By': 'node-9' });
      expect(twice.status).toBe(503);
      expect(twice.body.error).toMatchObject({ code: 'store_unavailable', retryable: true });

      // A clean stop gives the agent back: the other node takes it on the next request.
      expect(await n1.stop()).toBe(0);
      const after = await a2.get('/api/agents/fw-1/status');
      expect(after.status, after.text).toBe(200);
      expect(after.headers.get('x-holon-forwarded-by')).toBeNull();
      expect((await a2.get<ReadyNode>('/readyz')).body.node?.agent_leases_held).toBeGreaterThanOrEqual(1);
      expect(await n2.stop()).toBe(0);
      const facts = await readClusterFacts(connectionOf(db), [{ agent_id: 'fw-1', kind: 'agent' }, { agent_id: 'fw-1', kind: 'message', message_id: prompted.body.message_id }]);
      expect(checkCluster(facts)).toEqual([]);
    }, 120_000);

    it('failover: the owner of a busy agent is SIGKILLed; another node serves it once the lease ran out, its command interrupted, not run again', async () => {
      const { db, nodes } = await listeningNodes(3);
      const [n1, n2, n3] = nodes as [ClusterNode, ClusterNode, ClusterNode];
      const a1 = client(n1.url);
      const a2 = client(n2.url);
      const acknowledged: Acknowledged[] = [];
      expect((await a1.post('/api/control/agents', { agent_id: 'busy' })).status).toBe(201);
      acknowledged.push({ agent_id: 'busy', kind: 'agent' });
      const first = await a1.post<{ message_id: string }>('/api/control/agents/busy/prompt', { text: '/exec sleep 30' });
      expect(first.status, first.text).toBe(200);
      acknowledged.push({ agent_id: 'busy', kind: 'message', message_id: first.body.message_id });
      const running = await waitFor(async () => {
        const tasks = await a1.get<{ items: Array<{ task_id: string; status: string }> }>('/api/agents/busy/tasks');
        return tasks.body.items.find((t) => t.status === 'running');
      }, 30_000);
      // An agent nobody sends anything to: only the claim loop can bring its timer to another node.
      expect((await a1.post('/api/control/agents', { agent_id: 'ticking' })).status).toBe(201);
      acknowledged.push({ agent_id: 'ticking', kind: 'agent' });
      expect((await a1.post('/api/control/agents/ticking/timers', { duration_ms: 500, interval_ms: 500 })).status).toBe(201);

      await n1.kill();
      const killedAt = Date.now();
      // Through node 2, until served: 503 while the dead node's lease lives.
      let served: { message_id: string } | null = null;
      let refusals = 0;
      while (served === null) {
        const reply = await a2.post<{ message_id: string }>('/api/control/agents/busy/prompt', { text: 'after the crash' }, { 'Idempotency-Key': 'after-crash' });
        if (reply.status === 200) served = reply.body;
        else {
          expect(reply.status, reply.text).toBe(503);
          refusals += 1;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        if (Date.now() - killedAt > 60_000) throw new Error('not served within 60 s of the kill');
      }
      const failoverMs = Date.now() - killedAt;
      console.log(`failover: served through node-2 ${failoverMs} ms after SIGKILL of the owner (lease TTL ${TTL_MS} ms; ${refusals} retryable 503s before)`);
      acknowledged.push({ agent_id: 'busy', kind: 'message', message_id: served.message_id });

      // The takeover recovered the command in doubt: interrupted, never started again.
      const task = await waitFor(async () => {
        const reply = await a2.get<{ status: string }>(`/api/agents/busy/tasks/${running.task_id}`);
        return reply.body.status === 'interrupted' ? reply.body : null;
      }, 30_000);
      expect(task.status).toBe('interrupted');
      // The message sent after the crash is processed by the new owner.
      await waitFor(async () => {
        const events = await a2.get<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>('/api/agents/busy/events?limit=500');
        return events.body.events.some((e) => e.type === 'turn_finished') && events.body.events.filter((e) => e.type === 'message_queued').length >= 2;
      }, 30_000);
      // The unrequested agent's timer fires again under a new holder: claimed after its lease expired.
      const claimed = new pg.Client(connectionOf(db));
      await claimed.connect();
      try {
        await waitFor(async () => {
          const { rows } = await claimed.query("SELECT count(*)::int AS n FROM holon.events WHERE agent_id = 'ticking' AND type = 'timer_fired' AND fencing_token > 1");
          return rows[0].n > 0;
        }, 30_000);
      } finally {
        await claimed.end();
      }
      await Promise.all([n2.stop(), n3.stop()]);
      const facts = await readClusterFacts(connectionOf(db), acknowledged);
      expect(checkCluster(facts)).toEqual([]);
      // Two holders wrote the agent, the second under a larger token.
      const tokens = [...new Set(facts.events.filter((e) => e.agent_id === 'busy').map((e) => `${e.fence}${e.fencing_token}`))];
      expect(tokens).toEqual(['a1', 'a2']);
    }, 180_000);

    it('a paused owner is taken over; resumed, it finds out, gives the agent up and writes nothing under its old token', async () => {
      const { db, nodes } = await listeningNodes(2);
      const [n1, n2] = nodes as [ClusterNode, ClusterNode];
      const a1 = client(n1.url);
      const a2 = client(n2.url);
      const acknowledged: Acknowledged[] = [{ agent_id: 'paused', kind: 'agent' }];
      expect((await a1.post('/api/control/agents', { agent_id: 'paused' })).status).toBe(201);
      // Side effects on node 1: an interval timer firing, and a running command.
      expect((await a1.post('/api/control/agents/paused/timers', { duration_ms: 300, interval_ms: 300 })).status).toBe(201);
      const first = await a1.post<{ message_id: string }>('/api/control/agents/paused/prompt', { text: '/exec sleep 30' });
      acknowledged.push({ agent_id: 'paused', kind: 'message', message_id: first.body.message_id });
      const running = await waitFor(async () => (await a1.get<{ items: Array<{ task_id: string; status: string; pid?: number | null }> }>('/api/agents/paused/tasks')).body.items.find((t) => t.status === 'running'), 30_000);
      await waitFor(async () => (await a1.get<{ events: Array<{ type: string }> }>('/api/agents/paused/events?limit=500')).body.events.filter((e) => e.type === 'timer_fired').length >= 2, 30_000);

      n1.pause();
      const pausedAt = Date.now();
      // Through node 2: forwarded to the paused holder until its lease runs out, then served by node 2.
      const served = await a2.post<{ message_id: string }>('/api/control/agents/paused/prompt', { text: 'while node 1 is paused' });
      expect(served.status, served.text).toBe(200);
      expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(TTL_MS / 3);
      acknowledged.push({ agent_id: 'paused', kind: 'message', message_id: served.body.message_id });
      const r2 = await a2.get<ReadyNode>('/readyz');
      expect(r2.body.node?.agent_leases_held).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      n1.resume();

      // Node 1 learns it lost the agent (renewal refused, or its own clock) and holds nothing.
      await waitFor(async () => (await a1.get<ReadyNode>('/readyz')).body.node?.agent_leases_held === 0, 15_000);
      // The command it ran is ended and recorded interrupted by the new owner, never run again.
      const task = await waitFor(async () => {
        const reply = await a2.get<{ status: string }>(`/api/agents/paused/tasks/${running.task_id}`);
        return reply.body.status === 'interrupted' ? reply.body : null;
      }, 15_000);
      expect(task.status).toBe('interrupted');
      // Node 2 serves the agent, and node 1 forwards to it now.
      const later = await a1.post<{ message_id: string }>('/api/control/agents/paused/prompt', { text: 'through node 1 again' });
      expect(later.status, later.text).toBe(200);
      expect(later.headers.get('x-holon-forwarded-by')).toBe('node-1');
      acknowledged.push({ agent_id: 'paused', kind: 'message', message_id: later.body.message_id });
      // The timer keeps firing at node 2 for a while; then both stop cleanly.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await n1.stop()).toBe(0);
      expect(await n2.stop()).toBe(0);
      const facts = await readClusterFacts(connectionOf(db), acknowledged);
      // No write under node 1's token after node 2's grant, no timer fired twice for one due time.
      expect(checkCluster(facts)).toEqual([]);
      const fired = facts.events.filter((e) => e.agent_id === 'paused' && e.type === 'timer_fired');
      // It fired under node 1, then (overdue once, then on its interval) under node 2.
      expect([...new Set(fired.map((e) => e.fencing_token))]).toEqual([1, 2]);
    }, 180_000);
  });
}
