import { DomainError } from '../domain/index.js';
import { CallbackParams, CallbackResponse, openErrors } from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['external triggers'];
export const CALLBACK_BODY_LIMIT = 256 * 1024;

/** `application/json` and the structured `+json` types (RFC 6839), parameters ignored. */
export function claimsJson(contentType: string | undefined): boolean {
  const essence = (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return essence === 'application/json' || (essence.startsWith('application/') && essence.endsWith('+json'));
}

/** A body that says it is JSON must be JSON: otherwise 400 `invalid_json`, before anything is recorded. */
function assertJson(body: Buffer): void {
  try {
    JSON.parse(body.toString('utf8'));
  } catch {
    throw new DomainError('invalid_json', 'the body is sent as application/json but is not valid JSON');
  }
}

/**
 * Capability ingress. Registered as its own encapsulated plugin so that here, and only here, any
 * content type is accepted and handed to the runtime as raw bytes (a body sent as JSON must parse). The URL's token is the only
 * authorisation; it is redacted from logs (see logging.ts) and never echoed.
 */
export async function callbackRoutes(scope: HttpApp, { runtime }: RouteDeps): Promise<void> {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CALLBACK_BODY_LIMIT }, (request, body, done) => {
    const raw = Buffer.isBuffer(body) ? body : Buffer.from(body);
    try {
      if (claimsJson(request.headers['content-type'])) assertJson(raw);
      done(null, raw);
    } catch (error) {
      done(error instanceof Error ? error : new Error(String(error)), undefined);
    }
  });

  const modes = [
    ['/callbacks/wake/:token', 'wake_hint', 'wakeByCapability', 'Capability wake hint: raw body ≤ 256 KiB → disposition'],
    ['/callbacks/enqueue/:token', 'enqueue_message', 'enqueueByCapability', 'Capability enqueue: raw body ≤ 256 KiB → external_event message'],
  ] as const;
  for (const [path, mode, operationId, summary] of modes) {
    scope.post(
      path,
      {
        // The route's own limit, so a 413 states the one that applies here.
        bodyLimit: CALLBACK_BODY_LIMIT,
        schema: {
          tags,
          operationId,
          summary,
          params: CallbackParams,
          response: { 200: CallbackResponse, ...openErrors(400, 403, 413, 429) },
        },
      },
      async (request) => {
        const raw: unknown = request.body;
        const body = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
        const contentType = request.headers['content-type'] ?? null;
        const result = await runtime.deliverCallback(mode, request.params.token, { content_type: contentType, body });
        return { ok: true as const, ...result };
      },
    );
  }
}
