import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/postgres/schema.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { client, createAgent, tempDir, waitFor } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const db = await testDatabase('cli_postgres');
const children = new Set<ChildProcess>();

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
});

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function serve(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--log-level', 'warn', '--log-format', 'pretty', ...args], {
    cwd: ROOT,
    env: { ...process.env, HOLON_TOKEN: '', HOLON_DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

/** What the process printed, line by line (empty lines dropped). */
function lines(run: Run): string[] {
  return run.output().split('\n').filter((line) => line.trim() !== '');
}

async function listening(run: Run): Promise<string> {
  return waitFor(async () => {
    if (run.child.exitCode !== null) throw new Error(`serve exited early:\n${run.output()}`);
    return /listening on (http:\/\/[^\s]+)/.exec(run.output())?.[1];
  }, 90_000);
}

if (db === null) {
  describe.skip('holon-xstate serve --store (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  const adminClient = (database: string): pg.Client => new pg.Client({ host: db.cluster.socketDir, port: db.cluster.tcpPort, user: db.cluster.user, database });
  const adminQuery = async (database: string, text: string): Promise<unknown[]> => {
    const admin = adminClient(database);
    await admin.connect();
    try {
      return (await admin.query(text)).rows;
    } finally {
      await admin.end();
    }
  };

  describe('holon-xstate serve --store postgres://…', () => {
    it('serves from PostgreSQL (--store, or HOLON_DATABASE_URL) and keeps agents across a restart', async () => {
      const dataDir = await tempDir('holon-cli-pg-');
      try {
        const first = serve(['--data-dir', dataDir, '--store', db.url, '--node-id', 'cli-node-1', '--advertise-url', 'http://10.1.2.3:8080/holon']);
        const api = client(await listening(first));
        expect(first.output()).toContain(`store: ${db.url.replace(/%2F/g, '/')}`);
        // The node is in the registry, under its id, with the address it was told to advertise.
        await waitFor(async () => first.output().includes('advertise url: http://10.1.2.3:8080/holon'), 30_000);
        expect(await adminQuery(db.name, 'SELECT node_id, advertise_url, expires_at > now() AS live FROM holon.nodes')).toEqual([
          { node_id: 'cli-node-1', advertise_url: 'http://10.1.2.3:8080/holon', live: true },
        ]);
        const agent = await createAgent(api, { agent_id: 'pg-cli-agent' });
        const before = await api.get<{ events: unknown[] }>(`/api/agents/${agent.id}/events`);
        expect(before.status, before.text).toBe(200);
        expect(before.body.events.length).toBeGreaterThan(0);
        first.child.kill('SIGTERM');
        expect(await first.exited).toBe(0);
        // A clean stop unregisters the node.
        expect(await adminQuery(db.name, 'SELECT node_id FROM holon.nodes')).toEqual([]);

        const second = serve(['--data-dir', dataDir, '--node-id', 'cli-node-2'], { HOLON_DATABASE_URL: db.url });
        const secondAddress = await listening(second);
        const again = client(secondAddress);
        // Without --advertise-url a node advertises the address it listens on.
        await waitFor(async () => second.output().includes(`advertise url: ${secondAddress}`), 30_000);
        expect(await adminQuery(db.name, 'SELECT node_id, advertise_url FROM holon.nodes')).toEqual([{ node_id: 'cli-node-2', advertise_url: secondAddress }]);
        const status = await again.get(`/api/agents/${agent.id}/status`);
        expect(status.status, status.text).toBe(200);
        const after = await again.get<{ events: unknown[] }>(`/api/agents/${agent.id}/events`);
        // The log continues (the restart adds its own events) after everything committed before.
        expect(after.body.events.slice(0, before.body.events.length)).toEqual(before.body.events);
        second.child.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });

    it('exits 1 with one clear line, after one attempt, for an unreachable database, a wrong password and a newer schema', async () => {
      const unreachable = serve(['--store', 'postgres://postgres@127.0.0.1:1/holon']);
      expect(await unreachable.exited).toBe(1);
      expect(lines(unreachable)).toEqual([
        expect.stringMatching(/FATAL holon-xstate: cannot reach PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:1\/holon: connection refused \(is the server running and listening there\?\) code=store_unavailable cause=ECONNREFUSED$/),
      ]);

      // A server that hangs up on every connection: one connection, then give up (no retry loop).
      let connections = 0;
      const hangUp = createServer((socket) => {
        connections += 1;
        socket.destroy();
      });
      await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
      const { port } = hangUp.address() as AddressInfo;
      try {
        const hungUp = serve(['--store', `postgres://postgres@127.0.0.1:${port}/holon`]);
        expect(await hungUp.exited).toBe(1);
        expect(lines(hungUp)).toEqual([expect.stringContaining(`FATAL holon-xstate: PostgreSQL at postgres://postgres@127.0.0.1:${port}/holon failed while opening the store: `)]);
        expect(connections).toBe(1);
      } finally {
        hangUp.close();
      }

      // A wrong password over loopback TCP (scram-sha-256): refused once, said once, never echoed.
      const role = `cli_pw_${process.pid}`;
      await adminQuery(db.name, `CREATE ROLE ${role} LOGIN PASSWORD 'the-right-one'`);
      const wrong = serve(['--store', db.cluster.tcpUrl(db.name, role, 'not-the-password')]);
      expect(await wrong.exited).toBe(1);
      expect(lines(wrong)).toEqual([
        expect.stringMatching(new RegExp(`FATAL holon-xstate: PostgreSQL at postgres://${role}@127\\.0\\.0\\.1:${db.cluster.tcpPort}/${db.name} refused the password of user "${role}" \\(password authentication failed\\) code=store_unavailable cause=28P01$`)),
      ]);
      expect(wrong.output()).not.toContain('not-the-password');
      const refusals = readFileSync(db.cluster.logPath, 'utf8').split('\n').filter((line) => line.includes(`password authentication failed for user "${role}"`));
      expect(refusals).toHaveLength(1);

      await adminQuery(db.name, 'CREATE SCHEMA future');
      await adminQuery(db.name, 'CREATE TABLE future.schema_version (singleton boolean PRIMARY KEY DEFAULT true, version int NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())');
      await adminQuery(db.name, `INSERT INTO future.schema_version (version) VALUES (${SCHEMA_VERSION + 1})`);
      const newer = serve(['--store', `${db.url}&schema=future`]);
      expect(await newer.exited).toBe(1);
      expect(lines(newer)).toEqual([expect.stringContaining(`FATAL holon-xstate: the database at `)]);
      expect(newer.output()).toContain(`has schema version ${SCHEMA_VERSION + 1}, newer than this holon-xstate's (${SCHEMA_VERSION})`);
      expect(await adminQuery(db.name, 'SELECT version FROM future.schema_version')).toEqual([{ version: SCHEMA_VERSION + 1 }]);

      const malformed = serve(['--store', 'postgres://x@y/db?sslmode=disable']);
      expect(await malformed.exited).toBe(2);
      expect(malformed.output()).toContain('unknown PostgreSQL URL parameter "sslmode"');

      const badAdvertise = serve(['--store', db.url, '--advertise-url', 'http://user:hunter2@10.0.0.1:8080']);
      expect(await badAdvertise.exited).toBe(2);
      expect(badAdvertise.output()).toContain('invalid --advertise-url: an advertise URL must be http(s)://host[:port][/path]');
      expect(badAdvertise.output()).not.toContain('hunter2');
    });

    it('creates the schema once when several serve processes start at once on a fresh database', async () => {
      const fresh = `${db.name}_fresh`;
      await adminQuery('postgres', `CREATE DATABASE "${fresh}"`);
      const url = db.cluster.url(fresh);
      // Hold the migration's advisory lock until every process waits on it: they all migrate at once.
      const holder = adminClient(fresh);
      await holder.connect();
      const dirs = await Promise.all(Array.from({ length: 4 }, () => tempDir('holon-cli-pg-')));
      try {
        await holder.query('SELECT pg_advisory_lock(hashtext($1))', ['holon-xstate schema holon']);
        const nodes = dirs.map((dir, i) => serve(['--data-dir', dir, '--store', url, '--node-id', `node-${i}`]));
        await waitFor(async () => {
          for (const node of nodes) if (node.child.exitCode !== null) throw new Error(`serve exited early:\n${node.output()}`);
          const waiting = await holder.query("SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = $1", [fresh]);
          return waiting.rows[0].n === nodes.length;
        }, 90_000);
        await holder.query('SELECT pg_advisory_unlock(hashtext($1))', ['holon-xstate schema holon']);
        // Each is past the migration once it serves: every node of a cluster serves (no store-wide
        // lease; each agent has its own), registered in the nodes registry.
        await waitFor(async () => {
          for (const node of nodes) if (node.child.exitCode !== null) throw new Error(`serve exited:\n${node.output()}`);
          return nodes.every((node) => /advertise url: /.test(node.output()));
        }, 90_000);
        for (const node of nodes) expect(node.output()).not.toMatch(/FATAL|ERROR|waiting up to/);
        expect((await holder.query('SELECT version FROM holon.schema_version')).rows).toEqual([{ version: SCHEMA_VERSION }]);
        expect((await holder.query('SELECT node_id FROM holon.nodes ORDER BY node_id')).rows).toEqual(nodes.map((_, i) => ({ node_id: `node-${i}` })));
        for (const node of nodes) node.child.kill('SIGKILL');
        await Promise.all(nodes.map((node) => node.exited));
      } finally {
        await holder.end();
        await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
      }
    }, 180_000);
  });
}
