import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentId } from '../../src/domain/index.js';
import { servedRoutes, type ServedRoute } from '../../src/http/app.js';
import { machines } from '../../machines/index.js';
import { client, createAgent, hashTree, settled, startServer } from './helpers.js';

/**
 * Property: for every route, malformed requests (bad params, bodies, queries, headers, content
 * types, invalid JSON, deep nesting, oversize bodies) are answered 4xx with the error envelope —
 * never 2xx, never 5xx — and leave the data directory byte-identical (lease files excepted, see
 * VOLATILE_FILE in helpers.ts). Every generated case carries at least one fault the route must
 * refuse; bodies are filtered against the route's own zod schema so that none is valid by chance.
 */

const TOKEN = 'fuzz-control-token';
const RUNS_PER_ROUTE = 200;

const server = await startServer({ token: TOKEN });
const api = client(server.base, TOKEN);
const agent = await createAgent(api, { agent_id: 'fuzz-agent' });
await settled(api, agent.id);
const baseline = await hashTree(server.dataDir);
const routes = servedRoutes(server.app);

afterAll(async () => server.close());

/** A valid body per route (undefined: the route takes none), so a header fault is the only fault. */
const SAMPLE_BODIES: Readonly<Record<string, unknown>> = {
  'POST /api/control/agents': { mission: 'fuzz' },
  'POST /api/control/agents/:id/control': { action: 'start' },
  'POST /api/control/agents/:id/transitions': { transition_id: 't-1', to: 'active', reason: 'fuzz', expected_version: 1 },
  'POST /api/control/agents/:id/current-run/abort': {},
  'POST /api/control/agents/:id/prompt': { text: 'fuzz' },
  'POST /api/agents/:id/enqueue': { text: 'fuzz' },
  'POST /api/control/agents/:id/wake': { reason: 'fuzz' },
  'POST /api/control/agents/:id/work-items': { objective: 'fuzz' },
  'PATCH /api/control/agents/:id/work-items/:wid': { objective: 'fuzz' },
  'POST /api/control/agents/:id/work-items/:wid/pick': {},
  'POST /api/control/agents/:id/work-items/:wid/complete': { report_text: 'fuzz' },
  'POST /api/control/agents/:id/waits': { wake: 'external' },
  'POST /api/control/agents/:id/timers': { duration_ms: 60_000 },
  'POST /api/control/agents/:id/tasks': { summary: 'fuzz', cmd: 'true' },
  'POST /api/control/agents/:id/invoke': { prompt: 'fuzz', summary: 'fuzz' },
  'POST /api/control/agents/:id/tasks/:tid/input': { text: 'fuzz' },
  'POST /api/control/agents/:id/triggers': { delivery_mode: 'wake_hint' },
  'POST /api/control/turns/claim': { wait_ms: 0 },
  'POST /api/control/turns/:run_id/complete': { claim_id: 'claim_missing', actions: [] },
  'POST /api/control/turns/:run_id/heartbeat': { claim_id: 'claim_missing' },
};

/** Parameter values that name nothing (a well-formed miss) for routes under test. */
const MISSING: Readonly<Record<string, string>> = { run_id: 'run_missing', token: 'tok_missing', name: 'agent' };

interface FuzzCase {
  fault: string;
  params: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: { raw: string | Buffer; contentType: string };
}

const zodOf = (value: unknown): z.ZodType | undefined => (value instanceof z.ZodType ? value : undefined);
const headerKeys = (route: ServedRoute): string[] => {
  const headers = zodOf(route.schema?.headers);
  return headers instanceof z.ZodObject ? Object.keys(headers.shape) : [];
};
const paramNames = (url: string): string[] => [...url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] as string);
const json = (value: unknown): { raw: string; contentType: string } => ({ raw: JSON.stringify(value), contentType: 'application/json' });

/** Printable ASCII, as header values must be. */
const ascii = (maxLength: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

function badParam(name: string): fc.Arbitrary<string> {
  const anyText = fc
    .string({ minLength: 1, maxLength: 300, unit: 'binary' })
    .filter((s) => s !== '.' && s !== '..' && !/[\uD800-\uDFFF]/.test(s));
  if (name === 'id') {
    return fc.oneof(
      anyText.filter((s) => s !== agent.id),
      fc.stringMatching(/^[a-z][a-z0-9_-]{0,40}$/).map((s) => `ghost-${s}`),
      fc.constant('x'.repeat(129)),
    ).filter((s) => s !== agent.id);
  }
  if (name === 'name') return anyText.filter((s) => !(s in machines));
  if (name === 'token') return fc.oneof(anyText, fc.stringMatching(/^[A-Za-z0-9_-]{43}$/));
  return fc.oneof(anyText, fc.constant('y'.repeat(201)));
}

function validParams(route: ServedRoute): Record<string, string> {
  return Object.fromEntries(paramNames(route.url).map((name) => [name, name === 'id' ? agent.id : (MISSING[name] ?? `${name}_missing`)]));
}

function sampleBody(route: ServedRoute): FuzzCase['body'] {
  const sample = SAMPLE_BODIES[`${route.method} ${route.url}`];
  return sample === undefined ? undefined : json(sample);
}

interface Weighted {
  arbitrary: fc.Arbitrary<FuzzCase>;
  weight: number;
}

function faultArbitraries(route: ServedRoute): Weighted[] {
  const key = `${route.method} ${route.url}`;
  const isApi = route.url.startsWith('/api/');
  const isStream = route.url.endsWith('/stream');
  const isCallback = route.url.startsWith('/callbacks/');
  const bodySchema = zodOf(route.schema?.body);
  const querySchema = zodOf(route.schema?.querystring);
  const headers = headerKeys(route);
  const auth: Record<string, string> = isApi ? { authorization: `Bearer ${TOKEN}` } : {};
  const base = (): Omit<FuzzCase, 'fault'> => ({ params: validParams(route), query: {}, headers: { ...auth }, body: sampleBody(route) });
  const arbitraries: Weighted[] = [];
  const common = (arbitrary: fc.Arbitrary<FuzzCase>): void => void arbitraries.push({ arbitrary, weight: 8 });
  // Oversize bodies are the most expensive case: kept rare.
  const rare = (arbitrary: fc.Arbitrary<FuzzCase>): void => void arbitraries.push({ arbitrary, weight: 1 });

  // Parameters that are malformed or name nothing; the body may be anything.
  const names = paramNames(route.url);
  if (names.length > 0) {
    common(
      fc
        .record({
          name: fc.constantFrom(...names),
          body: isCallback ? fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)) : fc.jsonValue({ maxDepth: 3 }),
          contentType: fc.constantFrom('application/json', 'text/plain', 'application/octet-stream'),
        })
        .chain(({ name, body, contentType }) =>
          badParam(name).map((value): FuzzCase => ({
            ...base(),
            fault: `param:${name}`,
            params: { ...validParams(route), [name]: value },
            body:
              route.method === 'GET'
                ? undefined
                : Buffer.isBuffer(body)
                  ? { raw: body, contentType }
                  : json(body),
          })),
        ),
    );
  }

  if (bodySchema) {
    const failsSchema = (value: unknown): boolean => !bodySchema.safeParse(value).success;
    const sample = SAMPLE_BODIES[key];
    const sampleObject = sample !== null && typeof sample === 'object' && !Array.isArray(sample) ? (sample as Record<string, unknown>) : {};
    const fieldNames = Object.keys(sampleObject);
    common(
      fc.oneof(
        // Any JSON value the schema refuses.
        fc.jsonValue({ maxDepth: 4 }).filter(failsSchema).map((value): FuzzCase => ({ ...base(), fault: 'body:json', body: json(value) })),
        // The sample with an unknown field or a field of the wrong type / size.
        fc
          .record({
            field: fieldNames.length > 0 ? fc.constantFrom(...fieldNames, '__extra') : fc.constant('__extra'),
            value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: 66_000, max: 70_000 }).map((n) => 'z'.repeat(n))),
          })
          .map(({ field, value }) => ({ ...sampleObject, [field === '__extra' ? 'unexpected_field' : field]: value }))
          .filter(failsSchema)
          .map((value): FuzzCase => ({ ...base(), fault: 'body:field', body: json(value) })),
        // Not JSON at all.
        fc
          .string({ maxLength: 200 })
          .filter((text) => {
            try {
              JSON.parse(text);
              return false;
            } catch {
              return true;
            }
          })
          .map((raw): FuzzCase => ({ ...base(), fault: 'body:invalid_json', body: { raw, contentType: 'application/json' } })),
        // Deeper than the nesting limit.
        fc.integer({ min: 65, max: 20_000 }).map((depth): FuzzCase => ({
          ...base(),
          fault: 'body:deep',
          body: { raw: `{"${fieldNames[0] ?? 'x'}":${'['.repeat(depth)}${']'.repeat(depth)}}`, contentType: 'application/json' },
        })),
        // A well-formed body under a content type the route does not take.
        fc
          .constantFrom('text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'image/png', 'application/json-patch+json')
          .map((contentType): FuzzCase => ({ ...base(), fault: 'body:content_type', body: { raw: JSON.stringify(sample ?? {}), contentType } })),
      ),
    );
    // Over the 256 KiB limit.
    rare(
      fc.integer({ min: 256 * 1024 + 1, max: 300 * 1024 }).map((size): FuzzCase => ({
        ...base(),
        fault: 'body:too_large',
        body: { raw: `{"x":"${'a'.repeat(size)}"}`, contentType: 'application/json' },
      })),
    );
  }
  if (isCallback) {
    rare(
      fc.integer({ min: 256 * 1024 + 1, max: 300 * 1024 }).map((size): FuzzCase => ({
        ...base(),
        fault: 'body:too_large',
        params: { token: 'tok_missing' },
        body: { raw: Buffer.alloc(size, 7), contentType: 'application/octet-stream' },
      })),
    );
  }

  if (querySchema) {
    const known = querySchema instanceof z.ZodObject ? Object.keys(querySchema.shape) : [];
    common(
      fc
        .record({
          known: known.length > 0 ? fc.dictionary(fc.constantFrom(...known), fc.string({ maxLength: 40 }), { maxKeys: known.length }) : fc.constant({}),
          extra: fc.dictionary(fc.stringMatching(/^[a-z][a-z_]{0,11}$/), fc.string({ maxLength: 40 }), { maxKeys: 3 }),
        })
        .map(({ known: k, extra }) => ({ ...k, ...extra }))
        .filter((query) => !querySchema.safeParse(query).success)
        .map((query): FuzzCase => ({ ...base(), fault: 'query', query })),
    );
  }

  const headerFaults: Array<fc.Arbitrary<FuzzCase>> = [];
  if (headers.includes('idempotency-key')) {
    headerFaults.push(
      fc
        .oneof(ascii(40).map((s) => `k${'x'.repeat(200)}${s}`), ascii(20).map((s) => `k\t${s}k`))
        .map((value): FuzzCase => ({ ...base(), fault: 'header:idempotency-key', headers: { ...auth, 'idempotency-key': value } })),
    );
  }
  if (headers.includes('if-match')) {
    headerFaults.push(
      ascii(30)
        .filter((s) => !/^(?:W\/)?"?\d{1,15}"?$/.test(s.trim()))
        .map((value): FuzzCase => ({ ...base(), fault: 'header:if-match', headers: { ...auth, 'if-match': value } })),
    );
  }
  if (headers.includes('last-event-id')) {
    headerFaults.push(
      ascii(30)
        .filter((s) => !/^\d{1,15}$/.test(s.trim()))
        .map((value): FuzzCase => ({ ...base(), fault: 'header:last-event-id', headers: { ...auth, 'last-event-id': value } })),
    );
  }
  if (isApi) {
    headerFaults.push(
      fc
        .oneof(ascii(80), ascii(80).map((s) => `Bearer ${s}`))
        .filter((value) => !value.includes(TOKEN))
        .map((value): FuzzCase => ({ ...base(), fault: 'header:authorization', headers: { authorization: value } })),
    );
  }
  if (isStream) {
    headerFaults.push(
      fc
        .constantFrom('application/json', 'text/html', 'text/event-stream;q=0', 'image/*', '*/*;q=0')
        .map((accept): FuzzCase => ({ ...base(), fault: 'header:accept', headers: { ...auth, accept } })),
    );
  }
  if (headerFaults.length > 0) common(fc.oneof(...headerFaults));
  return arbitraries;
}

function urlOf(route: ServedRoute, params: Record<string, string>, query: Record<string, string>): string {
  const path = route.url.replace(/:([A-Za-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
  const search = new URLSearchParams(query).toString();
  return `${server.base}${path}${search ? `?${search}` : ''}`;
}

const tally = new Map<string, Map<string, number>>();

it('covers every served route', () => {
    expect(routes.length).toBeGreaterThan(40);
  for (const route of routes) expect(faultArbitraries(route).length, `${route.method} ${route.url}`).toBeGreaterThan(0);
});

describe('malformed requests', () => {
  for (const route of routes) {
    const label = `${route.method} ${route.url}`;
    it(`${label}: ${RUNS_PER_ROUTE} malformed requests → 4xx envelope, never 2xx/5xx`, async () => {
      const counts = new Map<string, number>();
      tally.set(label, counts);
      await fc.assert(
        fc.asyncProperty(fc.oneof(...faultArbitraries(route)), async (fuzz) => {
          counts.set(fuzz.fault, (counts.get(fuzz.fault) ?? 0) + 1);
          const headers: Record<string, string> = { ...fuzz.headers };
          if (fuzz.body) headers['content-type'] = fuzz.body.contentType;
          const response = await fetch(urlOf(route, fuzz.params, fuzz.query), {
            method: route.method,
            headers,
            body: fuzz.body?.raw,
            signal: AbortSignal.timeout(10_000),
          });
          if (response.status < 400) await response.body?.cancel();
          const text = response.status < 400 ? '' : await response.text();
          expect(response.status, `${fuzz.fault}: ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          expect(response.status, `${fuzz.fault}: ${text.slice(0, 300)}`).toBeLessThan(500);
          const body = JSON.parse(text) as { ok: unknown; error: { code: unknown; message: unknown; retryable: unknown } };
          expect(body.ok).toBe(false);
          expect(typeof body.error.code).toBe('string');
          expect(typeof body.error.message).toBe('string');
          expect(body.error.retryable).toBe(false);
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
      expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(RUNS_PER_ROUTE);
    }, 120_000);
  }
});

describe('afterwards', () => {
  it('left the data directory byte-identical', async () => {
    const after = await hashTree(server.dataDir);
    expect(after).toEqual(baseline);
    expect(AgentId.safeParse(agent.id).success).toBe(true);
    const lines = [...tally].map(([route, counts]) => `${route}: ${[...counts].map(([f, n]) => `${f}=${n}`).join(' ')}`);
    console.log(`fuzz cases per route and fault kind:\n${lines.join('\n')}`);
  });
});
