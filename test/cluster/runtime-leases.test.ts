import { afterAll, describe, expect, it } from 'vitest';
import { Runtime } from '../../src/runtime/runtime.js';
import { PostgresStore } from '../../src/store/index.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { removeTempDirs, tempDir } from '../http/helpers.js';

/**
 * Two runtimes in this process on one PostgreSQL database (no HTTP): each agent's lease is kept by
 * the runtime that holds it for as long as it runs (renewed by its beat, many TTLs), the other is
 * told where the agent is, and a clean close gives the agent back with its work, to the other.
 */
const db = await testDatabase('cluster_runtime_leases');
const TTL_MS = 300;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

if (db === null) {
  describe.skip('cluster runtime leases (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const opened: Runtime[] = [];
  afterAll(async () => {
    for (const runtime of opened) await runtime.close().catch(() => undefined);
    await removeTempDirs();
  });
  const open = async (nodeId: string, advertiseUrl?: string): Promise<Runtime> => {
    const runtime = await Runtime.open({ store: new PostgresStore({ url: db.url }), dataDir: await tempDir('holon-cluster-rt-'), nodeId, leaseTtlMs: TTL_MS, ...(advertiseUrl ? { advertiseUrl } : {}) });
    opened.push(runtime);
    return runtime;
  };

  describe('agent leases in the runtime', () => {
    it('keeps an agent across many lease times, refuses it to another node, and hands it over on close', async () => {
      const a = await open('rt-a', 'http://127.0.0.1:1/a');
      const b = await open('rt-b');
      await a.createAgent({ agent_id: 'leased' });
      await sleep(TTL_MS * 5);
      // Still a's: its beat renewed the lease, so its commits still land.
      expect((await a.prompt('leased', { text: 'after five lease times' })).message_id).toMatch(/./);
      expect((await a.readiness()).node).toMatchObject({ node_id: 'rt-a', agent_leases_held: 1, heartbeat: { ok: true } });
      // b is told where it lives (a is registered), and cannot write it.
      expect(await b.route('leased')).toEqual({ kind: 'forward', holder: 'rt-a', url: 'http://127.0.0.1:1/a' });
      await expect(b.prompt('leased', { text: 'from b' })).rejects.toMatchObject({ code: 'lease_lost' });
      expect((await b.readiness()).node?.agent_leases_held).toBe(0);
      // a closes: the lease goes back; b takes the agent on its next request.
      const queued = await a.prompt('leased', { text: 'queued before the close' });
      opened.splice(opened.indexOf(a), 1);
      await a.close();
      // Fresh: b may still remember a's address for a moment (a forward there would fail and look again).
      expect(await b.route('leased', { fresh: true })).toEqual({ kind: 'local' });
      const summary = await b.getSummary('leased');
      expect(summary.identity.agent_id).toBe('leased');
      const events = await b.eventsPage('leased', { limit: 500, order: 'asc' });
      expect(events.events.some((e) => e.type === 'message_queued' && e.payload['message_id'] === queued.message_id)).toBe(true);
      expect((await b.readiness()).node?.agent_leases_held).toBe(1);
      // b never registered (no advertise URL): it renews its leases all the same.
      await sleep(TTL_MS * 5);
      expect((await b.prompt('leased', { text: 'b, five lease times later' })).message_id).toMatch(/./);
    });

    it('boots reading no roster entry; lists and finds capabilities of agents it never loaded from the database', async () => {
      const writer = await open('rt-writer');
      const created = await writer.createAgent({ agent_id: 'unread-1' });
      await writer.createAgent({ agent_id: 'unread-2' });
      const store = new PostgresStore({ url: db.url });
      let rosterReads = 0;
      const listRoster = store.listRoster.bind(store);
      store.listRoster = () => ((rosterReads += 1), listRoster());
      const reader = await Runtime.open({ store, dataDir: await tempDir('holon-cluster-rt-'), nodeId: 'rt-reader', leaseTtlMs: TTL_MS });
      opened.push(reader);
      expect(rosterReads).toBe(0);
      const page = await reader.listAgents({ q: 'unread-', limit: 1 });
      expect(page.items.map((i) => i.agent_id)).toEqual(['unread-1']);
      expect(page.next_cursor).toBe('unread-1');
      const rest = await reader.listAgents({ q: 'unread-', limit: 5, cursor: 'unread-1' });
      expect(rest).toEqual({ items: [expect.objectContaining({ agent_id: 'unread-2' })], next_cursor: null });
      // The writer holds both: the reader neither loaded nor leased them to answer.
      expect((await reader.readiness()).node?.agent_leases_held).toBe(0);
      const token = created.external_trigger.token;
      expect(await reader.callbackAgent(token)).toBe('unread-1');
      expect(await reader.callbackAgent(`${token}x`)).toBeNull();
      // A status filter is exact on the parsed entry, here as on the writer.
      const status = (await writer.getSummary('unread-1')).agent.status;
      expect((await reader.listAgents({ q: 'unread-', status, limit: 5 })).items.map((i) => i.agent_id)).toEqual((await writer.listAgents({ q: 'unread-', status, limit: 5 })).items.map((i) => i.agent_id));
      expect(rosterReads).toBe(0);
    });
  });
}
