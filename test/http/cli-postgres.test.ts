import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
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
  for (const child of children) if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
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

async function listening(run: Run): Promise<string> {
  return waitFor(async () => {
    if (run.child.exitCode !== null) throw new Error(`serve exited early:\n${run.output()}`);
    return /listening on (http:\/\/[^\s]+)/.exec(run.output())?.[1];
  }, 90_000);
}

if (db === null) {
  describe.skip('holon-xstate serve --store (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  describe('holon-xstate serve --store postgres://…', () => {
    it('serves from PostgreSQL (--store, or HOLON_DATABASE_URL) and keeps agents across a restart', async () => {
      const dataDir = await tempDir('holon-cli-pg-');
      try {
        const first = serve(['--data-dir', dataDir, '--store', db.url]);
        const api = client(await listening(first));
        expect(first.output()).toContain(`store: ${db.url.replace(/%2F/g, '/')}`);
        const agent = await createAgent(api, { agent_id: 'pg-cli-agent' });
        const before = await api.get<{ events: unknown[] }>(`/api/agents/${agent.id}/events`);
        expect(before.status, before.text).toBe(200);
        expect(before.body.events.length).toBeGreaterThan(0);
        first.child.kill('SIGTERM');
        expect(await first.exited).toBe(0);

        const second = serve(['--data-dir', dataDir], { HOLON_DATABASE_URL: db.url });
        const again = client(await listening(second));
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

    it('exits non-zero with a clear message for an unreachable database, a wrong password and a newer schema', async () => {
      const unreachable = serve(['--store', 'postgres://postgres@127.0.0.1:1/holon']);
      expect(await unreachable.exited).toBe(1);
      expect(unreachable.output()).toContain('cannot reach PostgreSQL at postgres://postgres@127.0.0.1:1/holon: connection refused');

      const { user } = db.cluster.passwordRole;
      const wrong = serve(['--store', db.cluster.url(db.name, user, 'not-the-password')]);
      expect(await wrong.exited).toBe(1);
      expect(wrong.output()).toContain(`refused the password of user "${user}"`);
      expect(wrong.output()).not.toContain('not-the-password');

      const admin = new pg.Client({ host: db.cluster.socketDir, user: db.cluster.user, database: db.name });
      await admin.connect();
      try {
        await admin.query('CREATE SCHEMA future');
        await admin.query('CREATE TABLE future.schema_version (singleton boolean PRIMARY KEY DEFAULT true, version int NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now())');
        await admin.query('INSERT INTO future.schema_version (version) VALUES ($1)', [SCHEMA_VERSION + 1]);
      } finally {
        await admin.end();
      }
      const newer = serve(['--store', `${db.url}&schema=future`]);
      expect(await newer.exited).toBe(1);
      expect(newer.output()).toContain(`has schema version ${SCHEMA_VERSION + 1}, newer than this holon-xstate's (${SCHEMA_VERSION})`);

      const malformed = serve(['--store', 'postgres://x@y/db?sslmode=disable']);
      expect(await malformed.exited).toBe(2);
      expect(malformed.output()).toContain('unknown PostgreSQL URL parameter "sslmode"');
    });
  });
}
