import { HttpError } from './errors.js';
import type { HttpApp } from './types.js';

/** The `charset` parameter of a Content-Type, lower-cased and unquoted, or null without one. */
function charsetOf(contentType: string | undefined): string | null {
  for (const parameter of (contentType ?? '').split(';').slice(1)) {
    const [name = '', value = ''] = parameter.split('=').map((part) => part.trim());
    if (name.toLowerCase() === 'charset') return value.replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return null;
}

const UTF8 = new Set(['utf-8', 'utf8']);

/**
 * The body parsers of the JSON routes: `application/json` in UTF-8 only (RFC 8259 §8.1: a JSON
 * text exchanged between systems is UTF-8; a body declared as another charset would be decoded
 * wrongly, so it is refused with 415), through Fastify's own parser (proto-poisoning refused).
 * Fastify's `text/plain` parser is removed: a JSON route refuses a text body with 415 naming
 * what it takes, instead of validating a string against an object schema.
 */
export function acceptUtf8JsonOnly(app: HttpApp): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== null && !UTF8.has(charset)) {
      done(new HttpError(415, 'unsupported_media_type', `application/json bodies must be UTF-8: charset=${charset.slice(0, 40)} is not supported (send charset=utf-8, or no charset)`), undefined);
      return;
    }
    parse(request, body as string, done);
  });
}
