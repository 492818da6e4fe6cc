import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/index.js';
import { MAX_FIELD_DELTAS } from '../../src/store/postgres/commit-batch.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/store/postgres/schema.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { at, commitOf, newEvents, rejection, T0, TTL_MS } from './contract.js';

const db = await testDatabase('store_postgres');

if (db === null) {
  describe.skip('postgres store (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const admin = new pg.Client({ host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database: db.name });
  await admin.connect();
  afterAll(() => admin.end());

  const opened: PostgresStore[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  let schemas = 0;
  const newSchema = (): string => `node_${(schemas += 1)}`;

  const dbUrl = db.url;
  function store(schema: string, url = dbUrl): PostgresStore {
    const made = new PostgresStore({ url, schema, connectTimeoutMs: 5_000 });
    opened.push(made);
    return made;
  }

  /** A new schema as the code of `version` left it: its migrations only, and its version recorded. */
  async function schemaAt(version: number): Promise<string> {
    const schema = newSchema();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(`CREATE TABLE ${schema}.schema_version (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version int NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())`);
    for (const migration of MIGRATIONS.slice(0, version)) await admin.query(migration(`"${schema}"`, schema));
    await admin.query(`INSERT INTO ${schema}.schema_version (version) VALUES ($1)`, [version]);
    return schema;
  }

  async function opened1(schema = newSchema()): Promise<PostgresStore> {
    const made = store(schema);
    await made.open();
    return made;
  }

  describe('postgres store: schema', () => {
    it('creates the schema once when several nodes open an empty database at once, at the current version', async () => {
      const schema = newSchema();
      const nodes = Array.from({ length: 6 }, () => store(schema));
      await Promise.all(nodes.map((node) => node.open()));
      const versions = await admin.query(`SELECT version FROM ${schema}.schema_version`);
      expect(versions.rows).toEqual([{ version: SCHEMA_VERSION }]);
      const tables = await admin.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema]);
      expect(tables.rows.map((r) => r.table_name)).toEqual(['agent_capabilities', 'agent_fields', 'agent_leases', 'agents', 'event_watchers', 'events', 'globals', 'lease_grants', 'nodes', 'schema_version', 'store_lease']);
      // Every node works on the one schema.
      const lease = await nodes[0]!.acquireLease('node-0', TTL_MS, T0);
      await nodes[0]!.commit(commitOf(lease, 'agent-1', null, { n: 1 }));
      expect(await nodes[5]!.loadAgent('agent-1')).toEqual({ version: 1, doc: { n: 1 }, last_event_seq: 0 });
    });

    it('refuses a database whose schema is newer than the code, saying so, and changes nothing', async () => {
      const schema = newSchema();
      await (await opened1(schema)).close();
      await admin.query(`UPDATE ${schema}.schema_version SET version = $1`, [SCHEMA_VERSION + 1]);
      const error = await rejection(store(schema).open(), 'store_unavailable');
      expect(error.message).toContain(`schema version ${SCHEMA_VERSION + 1}, newer than this holon-xstate's (${SCHEMA_VERSION})`);
      expect(error.details).toMatchObject({ schema_version: SCHEMA_VERSION + 1, supported_schema_version: SCHEMA_VERSION });
      expect((await admin.query(`SELECT version FROM ${schema}.schema_version`)).rows).toEqual([{ version: SCHEMA_VERSION + 1 }]);
    });

    it('migrates a schema at version 1 to the current one, keeping its agents and leases', async () => {
      // What the version-1 code created and wrote: migration 1 only.
      const schema = await schemaAt(1);
      await admin.query(`INSERT INTO ${schema}.agent_leases VALUES ('agent-old', 'node-a', 3, now(), now() + interval '1 hour')`);
      const node = await opened1(schema);
      expect((await admin.query(`SELECT version FROM ${schema}.schema_version`)).rows).toEqual([{ version: SCHEMA_VERSION }]);
      expect(await node.readAgentLease('agent-old')).toMatchObject({ holder: 'node-a', fencing_token: 3, live: true });
      await node.commit({ agent_id: 'agent-old', expected_version: null, doc: { kept: true }, events: newEvents(1), agent_fencing_token: 3 });
      expect(await node.locateAgent('agent-old')).toMatchObject({ holder: 'node-a', fencing_token: 3, advertise_url: null });
      await node.heartbeatNode('node-a', 'http://127.0.0.1:8080', TTL_MS);
      expect(await node.locateAgent('agent-old')).toMatchObject({ advertise_url: 'http://127.0.0.1:8080' });
    });

    it('migrates a schema at version 4 to 5 indexing the capabilities its agents already have', async () => {
      const schema = await schemaAt(4);
      await admin.query(`INSERT INTO ${schema}.agents (agent_id, version, last_event_seq, roster, fence, fencing_token) VALUES ('agent-old', 1, 0, $1, 's', 1)`, [JSON.stringify({ listing: {}, trigger_hashes: ['hOld', 'hOld2'] })]);
      const node = await opened1(schema);
      expect((await admin.query(`SELECT version FROM ${schema}.schema_version`)).rows).toEqual([{ version: SCHEMA_VERSION }]);
      expect(await node.agentForTriggerHash('hOld2')).toBe('agent-old');
      expect(await node.agentForTriggerHash('hOld')).toBe('agent-old');
    });

    it('migrates a schema at version 5 to 6 keeping its documents, which then take field deltas', async () => {
      const schema = await schemaAt(5);
      await admin.query(`INSERT INTO ${schema}.agents (agent_id, version, last_event_seq, fence, fencing_token) VALUES ('agent-old', 1, 0, 's', 1)`);
      await admin.query(`INSERT INTO ${schema}.agent_fields (agent_id, name, ord, json) VALUES ('agent-old', '"a"', 0, '1'), ('agent-old', '"list"', 1, '[{"n":0}]')`);
      const node = await opened1(schema);
      expect((await admin.query(`SELECT version FROM ${schema}.schema_version`)).rows).toEqual([{ version: SCHEMA_VERSION }]);
      const old = await node.loadAgent('agent-old');
      expect(old).toEqual({ version: 1, doc: { a: 1, list: [{ n: 0 }] }, last_event_seq: 0 });
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const doc = old!.doc as { a: number; list: Array<{ n: number }> };
      await node.commit(commitOf(lease, 'agent-old', 1, doc));
      const next = { a: 2, list: [...doc.list, { n: 1 }] };
      await node.commit(commitOf(lease, 'agent-old', 2, next));
      expect((await admin.query(`SELECT deltas FROM ${schema}.agent_fields WHERE agent_id = 'agent-old' AND name = '"list"'`)).rows).toEqual([{ deltas: '{"a":[[0,1],{"v":{"n":1}}]}' }]);
      expect(await node.loadAgent('agent-old')).toEqual({ version: 3, doc: next, last_event_seq: 0 });
    });

    it('reopens a migrated schema without touching it', async () => {
      const schema = newSchema();
      const first = await opened1(schema);
      const lease = await first.acquireLease('a', TTL_MS, T0);
      await first.commit(commitOf(lease, 'agent-1', null, { kept: true }, newEvents(2)));
      await first.close();
      const again = await opened1(schema);
      expect(await again.loadAgent('agent-1')).toEqual({ version: 1, doc: { kept: true }, last_event_seq: 2 });
    });
  });

  describe('postgres store: clear errors for bad configuration', () => {
    it('reports an unreachable server (no socket there) as store_unavailable naming where it looked', async () => {
      const error = await rejection(store('holon', 'postgres://postgres@/db?host=/nonexistent-holon-dir').open(), 'store_unavailable');
      expect(error.message).toBe('cannot reach PostgreSQL at postgres://postgres@/db?host=/nonexistent-holon-dir: connection refused (is the server running and listening there?)');
    });

    it('reports a closed TCP port as unreachable', async () => {
      const error = await rejection(store('holon', 'postgres://postgres@127.0.0.1:1/db').open(), 'store_unavailable');
      expect(error.message).toMatch(/^cannot reach PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/db: connection refused/);
    });

    it('reports a refused password without echoing it, and works with the right one', async () => {
      const { user, password } = db.cluster.passwordRole;
      const wrong = await rejection(store('holon', db.cluster.url(db.name, user, 'not-the-password')).open(), 'store_unavailable');
      expect(wrong.message).toBe(`PostgreSQL at postgres://${user}@/${db.name}?host=${db.cluster.socketDir}&port=${db.cluster.tcpPort} refused the password of user "${user}" (password authentication failed)`);
      expect(wrong.details).toMatchObject({ cause: '28P01' });
      expect(JSON.stringify({ message: wrong.message, details: wrong.details })).not.toContain('not-the-password');
      const right = store(`pw_${newSchema()}`, db.cluster.url(db.name, user, password));
      await right.open();
      expect(right.location).not.toContain(password);
    });

    it('reports a database that does not exist', async () => {
      const error = await rejection(store('x', db.cluster.url('no_such_db')).open(), 'store_unavailable');
      expect(error.message).toContain('database "no_such_db" does not exist');
    });

    it('refuses malformed URLs and unknown parameters before connecting', () => {
      expect(() => new PostgresStore({ url: 'mysql://x@y/z' })).toThrow(/must look like postgres:\/\//);
      expect(() => new PostgresStore({ url: 'postgres://x@y:5432/' })).toThrow(/no database named/);
      expect(() => new PostgresStore({ url: 'postgres://x@y/db?sslmode=require' })).toThrow(/unknown PostgreSQL URL parameter "sslmode"/);
      expect(() => new PostgresStore({ url: 'postgres://x@y/db', schema: 'Bad-Name' })).toThrow(/schema/);
    });
  });

  describe('postgres store: commits', () => {
    it('commits a batch of concurrent commits to many agents in ONE transaction', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const ids = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
      // Issued in one tick: one batch.
      const results = await Promise.all(ids.map((id) => node.commit(commitOf(lease, id, null, { id }, newEvents(2)))));
      expect(results.every((r) => r.version === 1)).toBe(true);
      const agents = await admin.query(`SELECT count(*)::int AS rows, count(DISTINCT xmin::text)::int AS transactions FROM ${schema}.agents`);
      const events = await admin.query(`SELECT count(*)::int AS rows, count(DISTINCT xmin::text)::int AS transactions FROM ${schema}.events`);
      expect(agents.rows[0]).toEqual({ rows: 200, transactions: 1 });
      expect(events.rows[0]).toEqual({ rows: 400, transactions: 1 });
      const xmins = await admin.query(`SELECT (SELECT min(xmin::text) FROM ${schema}.agents) = (SELECT min(xmin::text) FROM ${schema}.events) AS same`);
      expect(xmins.rows[0]).toEqual({ same: true });
    });

    it('keeps chained commits to one agent, issued in one tick, in one transaction too', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const results = await Promise.all([null, 1, 2, 3].map((expected, i) => node.commit(commitOf(lease, 'agent-chain', expected, { i }, newEvents(1)))));
      expect(results.map((r) => r.version)).toEqual([1, 2, 3, 4]);
      const events = await admin.query(`SELECT count(DISTINCT xmin::text)::int AS transactions, array_agg(event_seq ORDER BY event_seq)::text AS seqs FROM ${schema}.events`);
      expect(events.rows[0]).toEqual({ transactions: 1, seqs: '{1,2,3,4}' });
    });

    it('records in each event (and the agent row) the version and fence of the commit that wrote it, and refuses to change the log', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      await node.commit(commitOf(lease, 'agent-1', null, {}, newEvents(2)));
      const agentLease = await node.acquireAgentLease('agent-1', 'node-a', TTL_MS);
      await node.commit({ agent_id: 'agent-1', expected_version: 1, doc: {}, events: newEvents(1), agent_fencing_token: agentLease.fencing_token });
      const rows = await admin.query(`SELECT event_seq::int, version::int, fence, fencing_token::int FROM ${schema}.events ORDER BY event_seq`);
      expect(rows.rows).toEqual([
        { event_seq: 1, version: 1, fence: 's', fencing_token: lease.fencing_token },
        { event_seq: 2, version: 1, fence: 's', fencing_token: lease.fencing_token },
        { event_seq: 3, version: 2, fence: 'a', fencing_token: agentLease.fencing_token },
      ]);
      const agentRow = await admin.query(`SELECT version::int, fence, fencing_token::int FROM ${schema}.agents`);
      expect(agentRow.rows).toEqual([{ version: 2, fence: 'a', fencing_token: agentLease.fencing_token }]);
      for (const change of [`UPDATE ${schema}.events SET payload = '{}'`, `DELETE FROM ${schema}.events`, `TRUNCATE ${schema}.events`]) {
        await expect(admin.query(change)).rejects.toThrow(/append-only/);
      }
      expect((await node.readEvents('agent-1', { limit: 10, order: 'asc' })).newest_seq).toBe(3);
    });

    it('round-trips JSON holding newlines, NUL and non-ASCII characters exactly', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const doc = { text: 'line one\nline two\r\n\ttab', nul: 'a\u0000b', emoji: '🙂 ü', sep: '\u2028', quote: '"\\' };
      const payload = { multi: 'x\ny', nul: '\u0000' };
      await node.commit({ ...commitOf(lease, 'agent-j', null, doc, [{ type: 'agent_created', payload, ts: T0.toISOString() }]), roster: { note: 'a\nb' } });
      await node.commit(commitOf(lease, 'agent-k', null, { plain: true }, newEvents(1)));
      expect(await node.loadAgent('agent-j')).toEqual({ version: 1, doc, last_event_seq: 1 });
      expect((await node.readEvents('agent-j', { limit: 5, order: 'asc' })).events[0]?.payload).toEqual(payload);
      expect(await node.listRoster()).toEqual([
        { agent_id: 'agent-j', version: 1, roster: { note: 'a\nb' } },
        { agent_id: 'agent-k', version: 1, roster: null },
      ]);
    });

    it('refuses an event time or type spanning lines (the batch joins strings with newlines) and writes nothing', async () => {
      const node = await opened1();
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const [bad, good] = await Promise.allSettled([
        node.commit(commitOf(lease, 'agent-bad', null, {}, [{ type: 'agent_created', payload: {}, ts: '2030-01-01\nT00:00:00Z' }])),
        node.commit(commitOf(lease, 'agent-good', null, {}, newEvents(2))),
      ]);
      expect(bad.status).toBe('rejected');
      expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_request' });
      expect(good.status).toBe('fulfilled');
      expect((await node.readEvents('agent-good', { limit: 5, order: 'asc' })).events.map((e) => e.ts)).toEqual(newEvents(2).map((e) => e.ts));
      expect(await node.listAgentIds()).toEqual(['agent-good']);
    });

    it('fails a commit whose document is not JSON alone', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      const [bad, good] = await Promise.allSettled([
        node.commit(commitOf(lease, 'agent-bad', null, cyclic)),
        node.commit(commitOf(lease, 'agent-good', null, { ok: true })),
      ]);
      expect(bad.status).toBe('rejected');
      expect(good.status).toBe('fulfilled');
      expect(await node.listAgentIds()).toEqual(['agent-good']);
    });

    it('keeps documents out of the rows the roster reads, and writes only the fields a commit changed', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const random = (n: number): string => Array.from({ length: n }, () => Math.random().toString(36).slice(2)).join('');
      const docs = Array.from({ length: 100 }, () => ({ big: random(2_000), small: 0 }));
      await Promise.all(docs.map((doc, i) => node.commit({ ...commitOf(lease, `agent-${i}`, null, doc), roster: { i } })));
      const sizes = await admin.query(
        `SELECT pg_relation_size('${schema}.agents')::int AS agents, pg_total_relation_size('${schema}.agent_fields')::int AS fields`,
      );
      // 100 documents of ~20 KB live in agent_fields; the agents rows the roster reads stay small.
      expect(sizes.rows[0].fields).toBeGreaterThan(1_500_000);
      expect(sizes.rows[0].agents).toBeLessThanOrEqual(2 * 8192);
      expect((await node.listRoster()).map((e) => e.roster)).toEqual(docs.map((_, i) => ({ i })).sort((a, b) => (`agent-${a.i}` < `agent-${b.i}` ? -1 : 1)));

      const rowVersions = async (): Promise<Record<string, string>> => {
        const rows = await admin.query(`SELECT name, xmin::text AS x FROM ${schema}.agent_fields WHERE agent_id = 'agent-0'`);
        return Object.fromEntries(rows.rows.map((r) => [r.name, r.x]));
      };
      const before = await rowVersions();
      const next = { ...docs[0]!, small: 1 };
      await node.commit(commitOf(lease, 'agent-0', 1, next));
      const after = await rowVersions();
      expect(after['"big"']).toBe(before['"big"']);
      expect(after['"small"']).not.toBe(before['"small"']);
      expect(await node.loadAgent('agent-0')).toEqual({ version: 2, doc: next, last_event_seq: 0 });
    });

    it('writes a list or record that changed by a few entries as a delta, whole again after MAX_FIELD_DELTAS, and loads it in its key order', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const message = (n: number) => ({ n, text: 'x'.repeat(200) });
      let doc: { first: number; queue: Array<{ n: number; text: string }>; byId: Record<string, { n: number }>; last: string } = {
        first: 0,
        queue: [message(0), message(1)],
        byId: { m0: { n: 0 } },
        last: 'end',
      };
      let version = (await node.commit(commitOf(lease, 'agent-d', null, doc))).version;
      type FieldRow = { name: string; json: string; deltas: string | null };
      const stored = async (): Promise<Record<string, FieldRow>> =>
        Object.fromEntries((await admin.query<FieldRow>(`SELECT name, json, deltas FROM ${schema}.agent_fields WHERE agent_id = 'agent-d'`)).rows.map((r) => [r.name, r]));
      const queueJson = (await stored())['"queue"']!.json;
      // Every change: drop the oldest message, append one, and add a record entry.
      for (let i = 1; i <= MAX_FIELD_DELTAS + 2; i++) {
        doc = { ...doc, first: i, queue: [...doc.queue.slice(1), message(i + 1)], byId: { ...doc.byId, [`m${i}`]: { n: i } } };
        version = (await node.commit(commitOf(lease, 'agent-d', version, doc))).version;
        const rows = await stored();
        if (i <= MAX_FIELD_DELTAS) {
          expect(rows['"queue"']!.json).toBe(queueJson);
          expect(rows['"queue"']!.deltas?.split('\n')).toHaveLength(i);
          expect(rows['"byId"']!.deltas?.split('\n')).toHaveLength(i);
        } else {
          // The row held MAX_FIELD_DELTAS: this change wrote the field whole, then deltas start again.
          expect(rows['"queue"']!.deltas?.split('\n').length ?? 0).toBe(i - MAX_FIELD_DELTAS - 1);
          expect(JSON.parse(rows['"queue"']!.json)).toHaveLength(2);
        }
        expect(rows['"first"']!.deltas).toBeNull();
        // Another store instance (a node taking the agent over) reads the same document, keys in order.
        const loaded = await (await opened1(schema)).loadAgent('agent-d');
        expect(loaded).toEqual({ version, doc, last_event_seq: 0 });
        expect(JSON.stringify(loaded!.doc)).toBe(JSON.stringify(doc));
      }
      // A whole rewrite (after eviction) clears the deltas.
      node.evictAgent('agent-d');
      doc = { ...doc, queue: [...doc.queue, message(99)] };
      version = (await node.commit(commitOf(lease, 'agent-d', version, doc))).version;
      expect(Object.values(await stored()).map((r) => r.deltas)).toEqual([null, null, null, null]);
      expect(await node.loadAgent('agent-d')).toEqual({ version, doc, last_event_seq: 0 });
    });

    it('refuses to load a document whose stored deltas do not apply', async () => {
      const schema = newSchema();
      const node = await opened1(schema);
      const lease = await node.acquireLease('a', TTL_MS, T0);
      await node.commit(commitOf(lease, 'agent-x', null, { list: [{ n: 0 }] }));
      await admin.query(`UPDATE ${schema}.agent_fields SET deltas = '{"a":[[0,5]]}' WHERE agent_id = 'agent-x'`);
      const error = await rejection(node.loadAgent('agent-x'), 'store_unavailable');
      expect(error.message).toMatch(/agent agent-x: the stored deltas of field list do not apply to its value: .*outside the previous array of 1/);
    });

    it('rewrites the whole document when a field goes away, after eviction, and for values that are not records', async () => {
      const node = await opened1();
      const lease = await node.acquireLease('a', TTL_MS, T0);
      const steps: unknown[] = [{ a: 1, b: { c: [1, 2] }, gone: true }, { a: 1, b: { c: [1, 2] } }, [1, 'two', null], 'text', null, { back: { to: 'a record' } }];
      let version: number | null = null;
      for (const [i, doc] of steps.entries()) {
        if (i === 4) node.evictAgent('agent-w');
        version = (await node.commit(commitOf(lease, 'agent-w', version, doc))).version;
        expect(await node.loadAgent('agent-w')).toEqual({ version, doc, last_event_seq: 0 });
      }
      // Fields shared with the version before stay; a removed one is gone.
      const shared = { keep: { x: 1 }, change: 1 };
      version = (await node.commit(commitOf(lease, 'agent-w', version, shared))).version;
      version = (await node.commit(commitOf(lease, 'agent-w', version, { keep: shared.keep, change: 2 }))).version;
      version = (await node.commit(commitOf(lease, 'agent-w', version, { keep: shared.keep }))).version;
      expect(await node.loadAgent('agent-w')).toEqual({ version, doc: { keep: { x: 1 } }, last_event_seq: 0 });
    });

  });

  describe('postgres store: several nodes on one database', () => {
    it('fences a node whose agent lease expired and was taken, even before it knows', async () => {
      const schema = newSchema();
      const a = await opened1(schema);
      const b = await opened1(schema);
      const leaseA = await a.acquireAgentLease('agent-1', 'node-a', 200);
      await a.commit({ agent_id: 'agent-1', expected_version: null, doc: { by: 'a' }, events: newEvents(1), agent_fencing_token: leaseA.fencing_token });
      let leaseB = null;
      while (leaseB === null) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        leaseB = await b.acquireAgentLease('agent-1', 'node-b', TTL_MS).catch(() => null);
      }
      const loaded = await b.loadAgent('agent-1');
      expect(loaded).toEqual({ version: 1, doc: { by: 'a' }, last_event_seq: 1 });
      // Node a never renewed and never heard: its next commit is refused in the database.
      const error = await rejection(
        a.commit({ agent_id: 'agent-1', expected_version: 1, doc: { by: 'a, late' }, events: newEvents(1), agent_fencing_token: leaseA.fencing_token }),
        'lease_lost',
      );
      expect(error.details).toMatchObject({ current_fencing_token: leaseB.fencing_token, holder: 'node-b' });
      expect((await a.renewAgentLeases('node-a', [leaseA], TTL_MS)).lost).toEqual(['agent-1']);
      await b.commit({ agent_id: 'agent-1', expected_version: 1, doc: { by: 'b' }, events: newEvents(1), agent_fencing_token: leaseB.fencing_token });
      expect(await a.loadAgent('agent-1')).toEqual({ version: 2, doc: { by: 'b' }, last_event_seq: 2 });
    });

    it('gives the store lease to exactly one of several nodes acquiring at once', async () => {
      const schema = newSchema();
      const nodes = await Promise.all(Array.from({ length: 4 }, () => opened1(schema)));
      const settled = await Promise.allSettled(nodes.map((node, i) => node.acquireLease(`node-${i}`, TTL_MS, at(0))));
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      expect((await nodes[0]!.readLease())?.fencing_token).toBe(1);
    });
  });
}
