import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Runtime } from '../../src/runtime/runtime.js';
import { PostgresStore } from '../../src/store/index.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { call, removeTempDirs, tempDir } from '../http/helpers.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';

/**
 * A cluster node remembers where an agent another live node holds is served (issue 19, stop 26):
 * a forwarded request costs no database round trip, and a remembered route that went stale (the
 * agent moved) is corrected by the holder's refusal, not served wrongly nor answered 503.
 */
const db = await testDatabase('cluster_route_cache');
const db2 = await testDatabase('cluster_route_cache_http');

interface ReadyNode {
  node?: { node_id: string; agent_leases_held: number };
}

if (db === null || db2 === null) {
  describe.skip('cluster route cache (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const opened: Runtime[] = [];
  afterAll(async () => {
    for (const runtime of opened) await runtime.close().catch(() => undefined);
    await removeTempDirs();
  });
  const sets: NodeSet[] = [];
  afterEach(async () => {
    await Promise.all(sets.splice(0).map((set) => set.close()));
  });

  describe('route cache', () => {
    it('routes repeated requests for an agent another node holds with one locateAgent and no lease attempt', async () => {
      // A long TTL: the remembered route (a quarter of it) outlives the test's steps.
      const ttl = 120_000;
      const open = async (nodeId: string, store: PostgresStore, advertiseUrl: string): Promise<Runtime> => {
        const runtime = await Runtime.open({ store, dataDir: await tempDir('holon-route-cache-'), nodeId, leaseTtlMs: ttl, advertiseUrl });
        opened.push(runtime);
        return runtime;
      };
      const a = await open('rc-a', new PostgresStore({ url: db.url }), 'http://127.0.0.1:1/a');
      const storeB = new PostgresStore({ url: db.url });
      const b = await open('rc-b', storeB, 'http://127.0.0.1:1/b');
      await a.createAgent({ agent_id: 'held-by-a' });

      const calls = { locate: 0, acquire: 0 };
      const locate = storeB.locateAgent.bind(storeB);
      const acquire = storeB.acquireAgentLease.bind(storeB);
      storeB.locateAgent = (agentId) => {
        calls.locate += 1;
        return locate(agentId);
      };
      storeB.acquireAgentLease = (agentId, holder, ttlMs) => {
        calls.acquire += 1;
        return acquire(agentId, holder, ttlMs);
      };

      const forward = { kind: 'forward', holder: 'rc-a', url: 'http://127.0.0.1:1/a' };
      for (let i = 0; i < 5; i++) expect(await b.route('held-by-a')).toEqual(forward);
      expect(calls).toEqual({ locate: 1, acquire: 0 });
      // Fresh asks the database again.
      expect(await b.route('held-by-a', { fresh: true })).toEqual(forward);
      expect(calls).toEqual({ locate: 2, acquire: 0 });

      // a gives the agent back: the remembered route is still a's until a fresh look, which takes it here.
      opened.splice(opened.indexOf(a), 1);
      await a.close();
      expect(await b.route('held-by-a')).toEqual(forward);
      expect(await b.route('held-by-a', { fresh: true })).toEqual({ kind: 'local' });
      expect(calls.acquire).toBe(1);
      // Held here now: local without a look at the database.
      const before = calls.locate;
      expect(await b.route('held-by-a')).toEqual({ kind: 'local' });
      expect(calls.locate).toBe(before);
    }, 60_000);

    it('a stale remembered route is corrected: the old holder refuses, the sender looks again and forwards to the new holder', async () => {
      // A 60 s lease: each node remembers a route for 15 s, longer than the steps below take.
      const set = await startNodes({ storeUrl: db2.url, count: 3, prefix: 'rc', args: ['--lease-ttl-ms', '60000'] });
      sets.push(set);
      const [n1, n2, n3] = set.nodes as [ClusterNode, ClusterNode, ClusterNode];
      await Promise.all(set.nodes.map((node) => node.listening()));
      const prompt = (node: ClusterNode, text: string) => call<{ message_id: string }>(node.url, 'POST', '/api/control/agents/moving/prompt', { json: { text } });

      expect((await call(n1.url, 'POST', '/api/control/agents', { json: { agent_id: 'moving' } })).status).toBe(201);
      // Through node 2: forwarded to node 1, and node 2 remembers that node 1 holds it.
      const first = await prompt(n2, 'through node 2, held by node 1');
      expect(first.status, first.text).toBe(200);
      expect(first.headers.get('x-holon-forwarded-by')).toBe('rc-2');
      // Node 1 stops cleanly (the lease goes back); node 3 takes the agent; node 1 comes back at the same address, holding nothing.
      expect(await n1.stop()).toBe(0);
      const taken = await prompt(n3, 'node 3 takes it');
      expect(taken.status, taken.text).toBe(200);
      expect(taken.headers.get('x-holon-forwarded-by')).toBeNull();
      n1.start();
      await n1.listening();

      // Node 2 still remembers node 1: node 1 refuses (it does not hold it), node 2 looks again and forwards to node 3.
      const second = await prompt(n2, 'through node 2 again');
      expect(second.status, second.text).toBe(200);
      const held = async (node: ClusterNode) => (await call<ReadyNode>(node.url, 'GET', '/readyz')).body.node?.agent_leases_held;
      expect(await held(n3)).toBe(1);
      expect(await held(n1)).toBe(0);
      expect(await held(n2)).toBe(0);
      const events = await call<{ events: Array<{ type: string; payload: Record<string, unknown> }> }>(n3.url, 'GET', '/api/agents/moving/events?limit=500&order=asc');
      const queued = events.body.events.filter((e) => e.type === 'message_queued').map((e) => e.payload['message_id']);
      expect(queued).toEqual([first.body.message_id, taken.body.message_id, second.body.message_id]);

      // A node asked directly with the forwarded header for an agent it does not hold says so (the refusal the sender acts on).
      const refused = await call<{ error: { code: string } }>(n1.url, 'GET', '/api/agents/moving/status', { headers: { 'X-Holon-Forwarded-By': 'rc-9' } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('x-holon-not-holder')).toBe('rc-3');
    }, 120_000);
  });
}
