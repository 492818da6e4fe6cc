import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isProtectedRoute } from './auth.js';

type RouteTransform = typeof jsonSchemaTransform;
type DocumentTransform = typeof jsonSchemaTransformObject;
type Document = Record<string, unknown>;

/** What each error status means on this API (every one answers the ErrorEnvelope). */
const ERROR_DESCRIPTIONS: Readonly<Record<string, string>> = {
  '400': 'Invalid request: a parameter, query field, header or body failed validation (`invalid_request`, `invalid_json`); `details.issues` names each failing path',
  '401': 'Missing or invalid bearer token (`unauthorized`)',
  '403': 'Refused by policy, or an unknown, revoked or mismatched capability (`forbidden`)',
  '404': 'The agent, resource or cursor named does not exist (`agent_not_found`, `task_not_found`, `cursor_not_found`, ...)',
  '406': 'The client does not accept text/event-stream (`not_acceptable`)',
  '409': "Refused in the agent's current state (`version_conflict`, `agent_stopped`, `agent_terminated`, `illegal_transition`, `idempotency_conflict`, ...)",
  '413': 'The body is over the size limit, which the message states (`payload_too_large`)',
  '415': 'The body is not application/json in UTF-8 (`unsupported_media_type`)',
  '422': 'A guard refused the transition (`guard_rejected`, with the guard in `details`)',
  '429': 'The agent\'s inbox (by count or bytes) or the runtime\'s ingress is full (`inbox_full`, `details.scope` agent or process); nothing was recorded; retry after `Retry-After` seconds',
  '500': 'Internal error (`internal_error`)',
  '503': 'Unavailable, retryable: the store is unreachable, the write lease was lost, or the server is shutting down',
};

const OPERATION_ID = /^[a-z][A-Za-z0-9]*$/;

function isZod(value: unknown): value is z.ZodType {
  return value instanceof z.ZodType;
}

/** A response schema's description: its own, or the one it was registered with. */
function describe(schema: z.ZodType): string | undefined {
  return schema.description ?? z.globalRegistry.get(schema)?.description;
}

/**
 * Each response as `{description, content}`: error statuses say what they mean; a success
 * response says what its schema is (a schema without a description is a programming error, so
 * the document cannot silently fall back to "Default Response").
 */
function describeResponses(route: string, responses: Record<string, unknown>, hasJsonBody: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const errorSchema = Object.entries(responses).find(([status]) => Number(status) >= 400)?.[1];
  const statuses = Object.keys(responses);
  // Any route that parses a JSON body can refuse it for its size or its media type.
  if (hasJsonBody && isZod(errorSchema)) for (const status of ['413', '415']) if (!statuses.includes(status)) statuses.push(status);
  for (const status of statuses.sort()) {
    const response = responses[status] ?? errorSchema;
    if (!isZod(response)) {
      out[status] = response;
      continue;
    }
    const description = Number(status) >= 400 ? ERROR_DESCRIPTIONS[status] : describe(response);
    if (description === undefined) throw new Error(`OpenAPI: ${route} ${status}: the response schema has no description`);
    // A 204 has no body: its zod schema (z.null with a description) is documented as is.
    out[status] = status === '204' ? response : { description, content: { 'application/json': { schema: response } } };
  }
  return out;
}

/**
 * Route transform: the zod schemas as JSON Schema, an `operationId` required of every route,
 * described responses, and the security each operation has: `/api/*` takes the bearer token
 * (required with a control token; optional in local mode, where nothing authenticates), every
 * other route none. HEAD routes are left out: every GET answers HEAD (see docs/http-api.md).
 */
export function documentRoute(bearer: boolean): RouteTransform {
  return (input) => {
    const schema = input.schema as Record<string, unknown> | undefined;
    if (!schema || schema['hide']) return jsonSchemaTransform(input);
    const operationId = schema['operationId'];
    if (typeof operationId !== 'string' || !OPERATION_ID.test(operationId)) {
      throw new Error(`OpenAPI: ${input.route.method} ${input.url} needs a camelCase operationId`);
    }
    const responses = schema['response'] as Record<string, unknown> | undefined;
    const hasJsonBody = schema['body'] !== undefined && !input.url.startsWith('/callbacks/');
    const security = isProtectedRoute(input.url) ? (bearer ? [{ bearer: [] }] : [{}, { bearer: [] }]) : [];
    const described = {
      ...schema,
      security,
      ...(responses ? { response: describeResponses(`${input.route.method} ${input.url}`, responses, hasJsonBody) } : {}),
    };
    return jsonSchemaTransform({ ...input, schema: described } as Parameters<RouteTransform>[0]);
  };
}

/** Every `$ref` target under `value`. */
function refsIn(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) refsIn(item, into);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string') into.add(item);
      else refsIn(item, into);
    }
  }
}

/** Drops the component schemas no operation reaches (zod's registry holds every registered one). */
function pruneUnusedSchemas(document: Document): Document {
  const components = (document['components'] ?? {}) as Record<string, unknown>;
  const schemas = (components['schemas'] ?? {}) as Record<string, unknown>;
  const reached = new Set<string>();
  const queue: string[] = [];
  const visit = (value: unknown): void => {
    const found = new Set<string>();
    refsIn(value, found);
    for (const ref of found) {
      const name = ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : null;
      if (name !== null && !reached.has(name)) {
        reached.add(name);
        queue.push(name);
      }
    }
  };
  visit(document['paths']);
  while (queue.length > 0) visit(schemas[queue.shift() as string]);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => reached.has(name)));
  return { ...document, components: { ...components, schemas: kept } };
}

export const BEARER_SCHEME = {
  type: 'http' as const,
  scheme: 'bearer',
  description:
    'The control token (`--token` or `HOLON_TOKEN`). Required on /api/* when the server has one; in local mode (no token) it is not needed. `GET /handshake` says which mode is on.',
};

/** Document transform: zod's components, then only the ones an operation reaches. */
export function documentObject(): DocumentTransform {
  return (input) => pruneUnusedSchemas(jsonSchemaTransformObject(input) as Document) as ReturnType<DocumentTransform>;
}
