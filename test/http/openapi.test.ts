import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, servedRoutes } from '../../src/http/app.js';
import { call, startServer, type TestServer } from './helpers.js';

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: unknown;
  security?: unknown;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

let server: TestServer;
let doc: Document;

beforeAll(async () => {
  server = await startServer();
  const reply = await call<Document>(server.base, 'GET', '/openapi.json');
  expect(reply.status).toBe(200);
  doc = reply.body;
});
afterAll(async () => server.close());

const toOpenApiPath = (url: string): string => url.replace(/:([A-Za-z_]+)/g, '{$1}');

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it('documents exactly the routes the app serves', () => {
    const served = servedRoutes(server.app);
    const servedPaths = new Set(served.map((route) => toOpenApiPath(route.url)));
    expect(new Set(Object.keys(doc.paths))).toEqual(servedPaths);
    for (const route of served) {
      expect(doc.paths[toOpenApiPath(route.url)]?.[route.method.toLowerCase()], `${route.method} ${route.url}`).toBeDefined();
    }
  });

  it('gives every operation a success response and the error envelope for its error codes', () => {
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const codes = Object.keys(operation.responses);
        expect(codes.some((code) => code.startsWith('2')), `${method} ${path}`).toBe(true);
        for (const code of ['400', '500', '503']) expect(codes, `${method} ${path}`).toContain(code);
        if (path.startsWith('/api/')) expect(codes, `${method} ${path}`).toContain('401');
        for (const code of codes.filter((c) => Number(c) >= 400)) {
          expect(operation.responses[code]?.content?.['application/json']?.schema, `${method} ${path} ${code}`).toEqual({
            $ref: '#/components/schemas/ErrorEnvelope',
          });
        }
      }
    }
  });

  it('documents params, query, bodies and the contract-specific error codes', () => {
    const create = doc.paths['/api/control/agents']?.['post'];
    expect(create?.requestBody).toBeDefined();
    expect(Object.keys(create?.responses ?? {})).toEqual(expect.arrayContaining(['201', '409']));
    const status = doc.paths['/api/agents/{id}/status']?.['get'];
    expect(status?.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'path', name: 'id' })]));
    expect(status?.responses['200']?.content?.['application/json']?.schema).toEqual({ $ref: '#/components/schemas/AgentSummary' });
    expect(Object.keys(status?.responses ?? {})).toContain('404');
    const transitions = doc.paths['/api/control/agents/{id}/transitions']?.['post'];
    expect(Object.keys(transitions?.responses ?? {})).toEqual(expect.arrayContaining(['201', '409', '422']));
    const enqueue = doc.paths['/api/agents/{id}/enqueue']?.['post'];
    expect(Object.keys(enqueue?.responses ?? {})).toContain('403');
    const stream = doc.paths['/api/agents/{id}/events/stream']?.['get'];
    expect(stream?.responses['200']?.content).toHaveProperty('text/event-stream');
    expect(stream?.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'query', name: 'after_seq' })]));
    expect(doc.components.schemas).toHaveProperty('AgentSummary');
    expect(doc.components.schemas).toHaveProperty('ErrorEnvelope');
  });

  it('marks /api operations with the bearer scheme in bearer mode', async () => {
    const app = await buildApp({ runtime: server.runtime, auth: { token: 't' } });
    await app.ready();
    const bearerDoc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Document & {
      components: { securitySchemes?: Record<string, unknown> };
    };
    await app.close();
    expect(Object.keys(bearerDoc.components.securitySchemes ?? {})).toEqual(['bearer']);
    expect(bearerDoc.components.securitySchemes?.['bearer']).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(bearerDoc.paths['/api/agents/list']?.['get']?.security).toEqual([{ bearer: [] }]);
    // An open route says explicitly that it needs no authentication.
    expect(bearerDoc.paths['/healthz']?.['get']?.security).toEqual([]);
    await expect(SwaggerParser.validate(bearerDoc as never)).resolves.toBeTruthy();
  });
});
