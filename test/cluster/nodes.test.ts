import { afterEach, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../pg/shared-cluster.js';
import { client } from '../http/helpers.js';
import type { Acknowledged } from './checker.js';
import { checkCluster } from './checker.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';
import { readClusterFacts } from './read-facts.js';

/**
 * The harness and the checker on real `serve` processes sharing one database: a paused node
 * taken over, a crashed node taken over, a node started again; afterwards the checker, reading the
 * database directly, finds every acknowledged operation and no violation. Each agent is fenced
 * by its own lease: a request to a node that does not hold the agent is forwarded to its holder,
 * and served where it arrived once the holder's lease ran out (paused, or dead).
 */
let counter = 0;
async function freshDatabase(): Promise<TestDatabase | null> {
  counter += 1;
  return testDatabase(`cluster_nodes_${counter}`);
}

const probe = await freshDatabase();
const sets: NodeSet[] = [];
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});

if (probe === null) {
  describe.skip('cluster nodes (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('cluster harness: real nodes, one database, the checker afterwards', () => {
    it('a paused writer is taken over, a crashed one too, and the database keeps every acknowledged operation in one fenced chain per agent', async () => {
      const db = probe;
      const set = await startNodes({ storeUrl: db.url, count: 2, started: false });
      sets.push(set);
      const [n1, n2] = set.nodes as [ClusterNode, ClusterNode];
      const acknowledged: Acknowledged[] = [];
      const agents = ['c-1', 'c-2', 'c-3'];
      const prompt = async (node: ClusterNode, round: string): Promise<void> => {
        const api = client(node.url);
        for (const agent of agents) {
          const reply = await api.post<{ message_id: string }>(`/api/control/agents/${agent}/prompt`, { text: `${round} to ${agent}` });
          expect(reply.status, reply.text).toBe(200);
          acknowledged.push({ agent_id: agent, kind: 'message', message_id: reply.body.message_id });
        }
      };

      n1.start();
      await n1.listening();
      for (const agent of agents) {
        const reply = await client(n1.url).post('/api/control/agents', { agent_id: agent });
        expect(reply.status, reply.text).toBe(201);
        acknowledged.push({ agent_id: agent, kind: 'agent' });
      }
      await prompt(n1, 'first');

      // n1 paused past its lease: n2 takes over and serves.
      n1.pause();
      n2.start();
      await n2.listening();
      await prompt(n2, 'second');
      // n1 resumed: its lease is gone; whatever it still tries to write is refused.
      n1.resume();

      // n2 crashes; n1 (or a fresh n1) takes over.
      await n2.kill();
      await n1.stop();
      n1.start();
      await n1.listening();
      await prompt(n1, 'third');
      expect(await n1.stop()).toBe(0);

      const facts = await readClusterFacts({ host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database: db.name }, acknowledged);
      expect(checkCluster(facts)).toEqual([]);
      expect(facts.acknowledged).toHaveLength(12);
      // Three writers in turn, each under a larger agent-lease token than the one before.
      const tokens = [...new Set(facts.events.filter((e) => e.agent_id === 'c-1').sort((a, b) => a.event_seq - b.event_seq).map((e) => `${e.fence}${e.fencing_token}`))];
      expect(tokens).toEqual(['a1', 'a2', 'a3']);
    }, 180_000);
  });
}
