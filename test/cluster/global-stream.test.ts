import { afterEach, describe, expect, it } from 'vitest';
import { testDatabase } from '../pg/shared-cluster.js';
import { client, openStream, waitFor, type SseReader } from '../http/helpers.js';
import { startNodes, type ClusterNode, type NodeSet } from './harness.js';

/**
 * Issue 19: "the global stream on any node carries every agent's events". Two `serve` processes
 * on one throwaway PostgreSQL database, each holding one agent; the global stream of each node
 * carries both agents' events, each agent's in sequence order, each event once.
 */
const sets: NodeSet[] = [];
afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});

interface WireEvent {
  agent_id: string;
  event_seq: number;
  type: string;
}

const db = await testDatabase('cluster_global_stream');

/** Reads `stream` until `done` says the events so far are enough. */
async function readUntil(stream: SseReader, done: (events: WireEvent[]) => boolean): Promise<WireEvent[]> {
  const events: WireEvent[] = [];
  while (!done(events)) {
    const message = await stream.next(15_000);
    if (message === null) throw new Error('the stream ended');
    events.push(JSON.parse(message.data) as WireEvent);
  }
  return events;
}

const seqsOf = (events: WireEvent[], agentId: string) => events.filter((e) => e.agent_id === agentId).map((e) => e.event_seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

if (db === null) {
  describe.skip('cluster global stream (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('cluster: the global event stream', () => {
    it("each node's global stream carries every agent's events, in order, once", async () => {
      const set = await startNodes({ storeUrl: db.url, count: 2, args: ['--lease-ttl-ms', '3000'] });
      sets.push(set);
      const [n1, n2] = set.nodes as [ClusterNode, ClusterNode];
      await Promise.all([n1.listening(), n2.listening()]);
      const a1 = client(n1.url);
      const a2 = client(n2.url);
      // One agent held by each node (an agent is created where it is asked for).
      expect((await a1.post('/api/control/agents', { agent_id: 'gs-1' })).status).toBe(201);
      expect((await a2.post('/api/control/agents', { agent_id: 'gs-2' })).status).toBe(201);
      const newest = async (agentId: string) => {
        const page = await a1.get<{ events: WireEvent[] }>(`/api/agents/${agentId}/events?order=desc&limit=1`);
        return page.body.events[0]?.event_seq ?? 0;
      };
      const asleep = async (agentId: string) => (await a1.get<{ phase: string }>(`/api/agents/${agentId}/status`)).body.phase === 'sleeping';
      await waitFor(async () => (await asleep('gs-1')) && (await asleep('gs-2')));
      const before = { 'gs-1': await newest('gs-1'), 'gs-2': await newest('gs-2') };

      const streams = [await openStream(n1.url, '/api/events/stream'), await openStream(n2.url, '/api/events/stream')];
      try {
        for (let i = 0; i < 3; i++) {
          expect((await a1.post('/api/control/agents/gs-1/prompt', { text: `one ${i}` })).status).toBe(200);
          expect((await a2.post('/api/control/agents/gs-2/prompt', { text: `two ${i}` })).status).toBe(200);
        }
        await waitFor(async () => (await asleep('gs-1')) && (await asleep('gs-2')));
        const after = { 'gs-1': await newest('gs-1'), 'gs-2': await newest('gs-2') };
        expect(after['gs-1']).toBeGreaterThan(before['gs-1']);
        expect(after['gs-2']).toBeGreaterThan(before['gs-2']);
        const reached = (events: WireEvent[]) => (['gs-1', 'gs-2'] as const).every((id) => seqsOf(events, id).includes(after[id]));
        for (const stream of streams) {
          const events = await readUntil(stream, reached);
          for (const id of ['gs-1', 'gs-2'] as const) {
            // Every event committed since the stream opened, in sequence order, none twice (up to
            // `after`: the agent may have committed more meanwhile).
            expect(seqsOf(events, id).filter((seq) => seq <= after[id])).toEqual(range(before[id] + 1, after[id]));
          }
        }
      } finally {
        await Promise.all(streams.map((stream) => stream.close()));
      }
    });
  });
}
