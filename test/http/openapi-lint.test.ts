import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { TypedAgentEvent } from '../../src/domain/index.js';
import { buildApp } from '../../src/http/app.js';
import type { HttpApp } from '../../src/http/types.js';
import { startServer, type TestServer } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

interface Operation {
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
}
interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes?: Record<string, { type: string; scheme: string }> };
}

let server: TestServer;
const documents = new Map<'local' | 'bearer', Document>();
let workDir: string;

beforeAll(async () => {
  server = await startServer();
  workDir = await mkdtemp(join(tmpdir(), 'holon-openapi-'));
  for (const mode of ['local', 'bearer'] as const) {
    const app: HttpApp = await buildApp({ runtime: server.runtime, auth: mode === 'bearer' ? { token: 'lint-token' } : {} });
    documents.set(mode, (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document);
    await app.close();
  }
});
afterAll(async () => {
  await server?.close();
  await rm(workDir, { recursive: true, force: true });
});

const operations = (doc: Document): Array<[string, Operation]> =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Operation]));

describe('the OpenAPI document, linted with @redocly/cli (recommended rules, redocly.yaml)', () => {
  for (const mode of ['local', 'bearer'] as const) {
    it(`has no error and no warning in ${mode} mode`, async () => {
      const file = join(workDir, `openapi-${mode}.json`);
      await writeFile(file, JSON.stringify(documents.get(mode)));
      const cli = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
      const { stdout } = await run(process.execPath, [cli, 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], {
        cwd: ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 32 * 1024 * 1024,
      }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
        totals: { errors: number; warnings: number };
        problems: Array<{ ruleId: string; message: string }>;
      };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    }, 120_000);
  }
});

describe('the OpenAPI document, for generated clients', () => {
  it('names every operation with a unique camelCase operationId', () => {
    for (const doc of documents.values()) {
      const ids = operations(doc).map(([name, op]) => {
        expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]*$/);
        return op.operationId;
      });
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('describes every response (no "Default Response") and declares servers', () => {
    for (const doc of documents.values()) {
      expect(doc.servers?.length).toBeGreaterThan(0);
      for (const [name, op] of operations(doc)) {
        for (const [status, response] of Object.entries(op.responses)) {
          expect(response.description, `${name} ${status}`).not.toBe('Default Response');
          expect(response.description.length, `${name} ${status}`).toBeGreaterThan(8);
        }
      }
    }
  });

  it('declares the bearer scheme: required on /api/* with a token, optional in local mode, none elsewhere', () => {
    const local = documents.get('local') as Document;
    const bearer = documents.get('bearer') as Document;
    for (const doc of [local, bearer]) expect(doc.components.securitySchemes?.['bearer']).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [name, op] of operations(bearer)) {
      expect(op.security, name).toEqual(name.split(' ')[1]?.startsWith('/api/') ? [{ bearer: [] }] : []);
    }
    for (const [name, op] of operations(local)) {
      expect(op.security, name).toEqual(name.split(' ')[1]?.startsWith('/api/') ? [{}, { bearer: [] }] : []);
    }
  });

  it('keeps only the components an operation reaches', () => {
    for (const doc of documents.values()) {
      const text = JSON.stringify(doc);
      for (const name of Object.keys(doc.components.schemas)) expect(text, name).toContain(`"#/components/schemas/${name}"`);
    }
  });

  it('types AgentEvent as a union discriminated by type, each payload with its fields', () => {
    const doc = documents.get('local') as Document;
    const event = doc.components.schemas['AgentEvent'] as {
      oneOf: Array<{ properties: { type: { const: string }; payload: { properties: Record<string, unknown>; required?: string[] } } }>;
    };
    const members = new Map(event.oneOf.map((member) => [member.properties.type.const, member.properties.payload]));
    expect(members.size).toBe(event.oneOf.length);
    expect(members.get('task_status_changed')?.required).toEqual(expect.arrayContaining(['task_id', 'status']));
    expect(members.get('turn_started')?.required).toEqual(expect.arrayContaining(['run_id', 'message_id', 'turn_index']));
    expect(members.get('wake_hint')?.required).toEqual(expect.arrayContaining(['disposition']));
    const page = doc.components.schemas['EventsPage'] as { properties: { events: { items: unknown } } };
    expect(page.properties.events.items).toEqual({ $ref: '#/components/schemas/AgentEvent' });
  });

  it('lets a typed client read a payload field after narrowing by type, without a cast', () => {
    const read = (event: TypedAgentEvent): string | null => (event.type === 'task_status_changed' ? event.payload.task_id : null);
    expectTypeOf(read).returns.toEqualTypeOf<string | null>();
    expectTypeOf<Extract<TypedAgentEvent, { type: 'task_status_changed' }>['payload']['task_id']>().toEqualTypeOf<string>();
    expect(read({ id: 'a:1', event_seq: 1, ts: 't', agent_id: 'a', type: 'task_status_changed', payload: { task_id: 'task_1', status: 'queued' } })).toBe('task_1');
  });
});
