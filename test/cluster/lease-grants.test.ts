import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/index.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { newEvents, rejection } from '../store/contract.js';
import { checkCluster } from './checker.js';
import { readClusterFacts } from './read-facts.js';

const db = await testDatabase('lease_grants');

if (db === null) {
  describe.skip('lease grants (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const connection = { host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database: db.name };
  const store = new PostgresStore({ url: db.url, connectTimeoutMs: 5_000 });
  await store.open();
  afterAll(() => store.close());
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  describe('lease_grants and the checker on a real database', () => {
    it('records each grant with the version it fences from; the checker passes the history and catches a write slipped in under the old token', async () => {
      const first = await store.acquireAgentLease('g1', 'node-a', 200);
      await store.commit({ agent_id: 'g1', expected_version: null, doc: { n: 1 }, events: newEvents(1), agent_fencing_token: first.fencing_token });
      // Renewing and re-acquiring keep the token: no grant.
      await store.renewAgentLeases('node-a', [first], 200);
      await store.acquireAgentLease('g1', 'node-a', 200);
      await sleep(250);
      // node-a stopped renewing: node-b claims the orphan (a takeover), then commits.
      const [taken] = await store.claimDueAgents('node-b', 60_000, 10);
      expect(taken).toMatchObject({ agent_id: 'g1', holder: 'node-b', fencing_token: first.fencing_token + 1 });
      await rejection(store.commit({ agent_id: 'g1', expected_version: 1, doc: { n: 2 }, events: newEvents(1), agent_fencing_token: first.fencing_token }), 'lease_lost');
      await store.commit({ agent_id: 'g1', expected_version: 1, doc: { n: 2 }, events: newEvents(2), agent_fencing_token: first.fencing_token + 1 });

      const facts = await readClusterFacts(connection, []);
      expect(facts.grants).toEqual([
        { agent_id: 'g1', fencing_token: 1, at_version: 0 },
        { agent_id: 'g1', fencing_token: 2, at_version: 1 },
      ]);
      expect(facts.events.map((e) => [e.event_seq, e.version, e.fence, e.fencing_token])).toEqual([
        [1, 1, 'a', 1],
        [2, 2, 'a', 2],
        [3, 2, 'a', 2],
      ]);
      expect(checkCluster(facts)).toEqual([]);

      // What a store without the fence would have let through: node-a writing version 3 under token 1.
      const admin = new pg.Client(connection);
      await admin.connect();
      try {
        await admin.query(`INSERT INTO holon.events (agent_id, event_seq, ts, type, payload, version, fence, fencing_token) VALUES ('g1', 4, 'x', 'message_queued', '{}', 3, 'a', 1)`);
        await admin.query(`UPDATE holon.agents SET version = 3, last_event_seq = 4 WHERE agent_id = 'g1'`);
      } finally {
        await admin.end();
      }
      expect(checkCluster(await readClusterFacts(connection, [])).map((v) => v.rule)).toEqual(['token_decreased', 'write_after_larger_grant']);
    });
  });
}
