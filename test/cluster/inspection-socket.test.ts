import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { InspectionMessage } from '../../src/domain/index.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { client, waitFor } from '../http/helpers.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';

/**
 * Issue 19, "every route works through every node": the inspection WebSocket of an agent node 1
 * holds, opened on node 2, is relayed from node 1 (real `serve` processes, one throwaway
 * PostgreSQL database, a real `ws` client).
 */
const sets: NodeSet[] = [];
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});

const db = await testDatabase('cluster_inspection_socket');

/** Opens a WebSocket; resolves with it once open, or with the status of a refused upgrade. */
function connect(url: string): Promise<{ socket: WebSocket; messages: string[] } | number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const messages: string[] = [];
    socket.on('message', (data: Buffer) => messages.push(data.toString('utf8')));
    socket.on('open', () => resolve({ socket, messages }));
    socket.on('unexpected-response', (request, response) => {
      request.destroy();
      resolve(response.statusCode ?? 0);
    });
    socket.on('error', reject);
  });
}

if (db === null) {
  describe.skip('cluster inspection WebSocket (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('cluster: the inspection WebSocket through any node', () => {
    it("a socket opened on node 2 carries the live inspection of an agent node 1 holds", async () => {
      const set = await startNodes({ storeUrl: db.url, count: 2, args: ['--lease-ttl-ms', '3000'] });
      sets.push(set);
      const [n1, n2] = set.nodes as [ClusterNode, ClusterNode];
      await Promise.all([n1.listening(), n2.listening()]);
      const holder = client(n1.url);
      expect((await holder.post('/api/control/agents', { agent_id: 'ins-1' })).status).toBe(201);
      await waitFor(async () => (await holder.get<{ phase: string }>('/api/agents/ins-1/status')).body.phase === 'sleeping');

      const opened = await connect(`${n2.url.replace(/^http/, 'ws')}/api/agents/ins-1/inspection`);
      if (typeof opened === 'number') throw new Error(`upgrade refused: ${opened}`);
      try {
        // The holder watches the agent once the relayed upgrade reached it; until then a prompt's
        // events could pass unseen, so prompts go on until the socket carries one of their events.
        const isEvent = (m: string) => InspectionMessage.parse(JSON.parse(m)).type === '@xstate.event';
        await waitFor(async () => {
          expect((await holder.post('/api/control/agents/ins-1/prompt', { text: 'hello' })).status).toBe(200);
          return opened.messages.some(isEvent);
        }, 15_000, 250);
        expect(opened.messages.map((m) => InspectionMessage.parse(JSON.parse(m)).type)).toContain('@xstate.snapshot');
        // Node 2 never took the agent: node 1 still holds its lease.
        const ready = await holder.get<{ node?: { agent_leases_held: number } }>('/readyz');
        expect(ready.body.node?.agent_leases_held).toBe(1);
      } finally {
        opened.socket.close();
      }
      // An unknown agent is refused through node 2 as on its holder.
      expect(await connect(`${n2.url.replace(/^http/, 'ws')}/api/agents/nobody/inspection`)).toBe(404);
    });
  });
}
