import { CallbackParams, CallbackResponse, openErrors } from './schemas.js';
import type { HttpApp, RouteDeps } from './types.js';

const tags = ['external triggers'];
export const CALLBACK_BODY_LIMIT = 256 * 1024;

/**
 * Capability ingress. Registered as its own encapsulated plugin so that here, and only here, any
 * content type is accepted and handed to the runtime as raw bytes. The URL's token is the only
 * authorisation; it is redacted from logs (see logging.ts) and never echoed.
 */
export async function callbackRoutes(scope: HttpApp, { runtime }: RouteDeps): Promise<void> {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CALLBACK_BODY_LIMIT }, (_request, body, done) => {
    done(null, body);
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
          response: { 200: CallbackResponse, ...openErrors(403, 413) },
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
