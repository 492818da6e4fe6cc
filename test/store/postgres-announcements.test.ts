import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/index.js';
import type { CommittedRange } from '../../src/store/index.js';
import { EVENTS_CHANNEL } from '../../src/store/postgres/schema.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { commitOf, newEvents, T0, TTL_MS } from './contract.js';

/**
 * Migration 7: a commit batch announces its events (`NOTIFY`, which PostgreSQL serializes through
 * one lock held to the commit's flush) only while a store instance other than the committing one
 * watches. A raw `LISTEN` client hears every notification the server sends, in commit order, so
 * "not announced" is shown by what the next announced commit finds ahead of it.
 */
const db = await testDatabase('store_announcements');

if (db === null) {
  describe.skip('postgres announcements (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database: db.name });
    await client.connect();
    return client;
  };
  const admin = await connect();
  afterAll(() => admin.end());
  const opened: PostgresStore[] = [];
  const clients: pg.Client[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    await Promise.all(clients.splice(0).map((client) => client.end()));
  });
  let schemas = 0;

  async function store(schema: string): Promise<PostgresStore> {
    const made = new PostgresStore({ url: db!.url, schema, connectTimeoutMs: 5_000 });
    opened.push(made);
    await made.open();
    return made;
  }

  /** The agents of each notification of `schema` the server sent, in order. */
  async function rawListener(schema: string): Promise<string[][]> {
    const client = await connect();
    clients.push(client);
    const heard: string[][] = [];
    client.on('notification', (message) => {
      const [head, ...lines] = (message.payload ?? '').split('\n');
      if (head?.startsWith(`${schema} `)) heard.push(lines.map((line) => line.split(' ')[0] as string));
    });
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    return heard;
  }

  const until = async (done: () => boolean | Promise<boolean>, what: string): Promise<void> => {
    for (let i = 0; i < 500; i++) {
      if (await done()) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  describe('postgres store: committed events are announced only while another instance watches', () => {
    it('from the watcher’s ready on, not to itself, not after the last watcher stops, not to an expired row', async () => {
      const schema = `announce_${(schemas += 1)}`;
      const a = await store(schema);
      const b = await store(schema);
      const heard = await rawListener(schema);
      const lease = await a.acquireLease('a', TTL_MS, T0);
      const commit = (agent: string, events = 1) => a.commit(commitOf(lease, agent, null, { agent }, newEvents(events)));
      const watchers = async (): Promise<number> => Number((await admin.query(`SELECT count(*) AS n FROM ${schema}.event_watchers`)).rows[0]?.n);

      const ranges: CommittedRange[] = [];
      await commit('nobody-watches');
      // The committing instance watching itself: its node publishes its own events, nobody else needs them.
      const self = a.watchCommittedEvents(() => undefined);
      await self.ready;
      await commit('only-itself-watches');
      const watch = b.watchCommittedEvents((range) => ranges.push(range));
      await watch.ready;
      await commit('b-watches', 2);
      await until(() => ranges.length === 1, "b's range");
      expect(ranges).toEqual([{ agent_id: 'b-watches', first_seq: 1, last_seq: 2 }]);
      await until(() => heard.length === 1, 'the first notification');
      // Delivered in commit order: had the earlier commits been announced, they would come first.
      expect(heard).toEqual([['b-watches']]);

      watch.stop();
      self.stop();
      await until(async () => (await watchers()) === 0, 'the watcher rows to be deleted');
      await commit('watchers-stopped');
      await admin.query(`INSERT INTO ${schema}.event_watchers VALUES ('a-node-that-died', now() - interval '1 second')`);
      await commit('only-an-expired-watcher');
      await admin.query(`INSERT INTO ${schema}.event_watchers VALUES ('another-node', now() + interval '1 minute')`);
      await commit('another-node-watches');
      await until(() => heard.length === 2, 'the second notification');
      expect(heard).toEqual([['b-watches'], ['another-node-watches']]);
      expect(ranges).toHaveLength(1);
    });

    it('closing a watching store deletes its watcher row', async () => {
      const schema = `announce_${(schemas += 1)}`;
      const a = await store(schema);
      const watch = a.watchCommittedEvents(() => undefined);
      await watch.ready;
      const rows = async () => (await admin.query(`SELECT watcher FROM ${schema}.event_watchers`)).rows;
      expect(await rows()).toHaveLength(1);
      await a.close();
      expect(await rows()).toEqual([]);
    });
  });
}
