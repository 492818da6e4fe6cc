/**
 * Plain, secret-free JSON of what an actor holds (context, events, output), for inspection events
 * that leave the process. Capability tokens and credentials never appear in them:
 *
 * - a value under a key that names a secret (`token`, `secret`, `password`, `authorization`,
 *   `api_key`, `credential`, `cookie`, `trigger_url`, `capability`) becomes `[redacted]`;
 * - inside strings, a capability URL's token (`/callbacks/<mode>/<token>`), a `Bearer <token>`
 *   and any of the caller's known secrets become `[redacted]`.
 *
 * Actor references become `{ id, sessionId }`, functions their name, and anything deeper than
 * `maxDepth` `"[depth]"`, so a snapshot with live children or a cycle still serialises.
 */
export const REDACTED = '[redacted]';

const SECRET_KEY = /token|secret|passw(?:or)?d|authori[sz]ation|api[_-]?key|credential|cookie|trigger_url|capabilit/i;
const CALLBACK_TOKEN = /(\/callbacks\/[^/?#\s"']+\/)[^/?#\s"']+/g;
const BEARER = /(Bearer\s+)[^\s"',;]+/gi;

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export interface RedactOptions {
  /** Exact secret strings to cut out of every string value (e.g. the control token). */
  secrets?: readonly string[];
  maxDepth?: number;
}

export function redactText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(CALLBACK_TOKEN, `$1${REDACTED}`).replace(BEARER, `$1${REDACTED}`);
  for (const secret of secrets) if (secret.length > 0 && out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

function isActorRef(value: object): value is { id: string; sessionId: string } {
  const ref = value as { sessionId?: unknown; send?: unknown; id?: unknown };
  return typeof ref.sessionId === 'string' && typeof ref.send === 'function';
}

export function inspectionJson(value: unknown, options: RedactOptions = {}): Json | undefined {
  const secrets = options.secrets ?? [];
  const maxDepth = options.maxDepth ?? 10;
  const walk = (item: unknown, depth: number): Json | undefined => {
    if (item === null) return null;
    switch (typeof item) {
      case 'string':
        return redactText(item, secrets);
      case 'number':
        return Number.isFinite(item) ? item : null;
      case 'boolean':
        return item;
      case 'function':
        return { type: item.name || 'anonymous' };
      case 'object':
        break;
      default:
        return undefined;
    }
    if (depth >= maxDepth) return '[depth]';
    if (item instanceof Date) return item.toISOString();
    if (item instanceof Error) return { name: item.name, message: redactText(item.message, secrets) };
    if (Array.isArray(item)) return item.map((entry) => walk(entry, depth + 1) ?? null);
    if (isActorRef(item)) return { id: item.id, sessionId: item.sessionId };
    const out: { [key: string]: Json } = {};
    for (const [key, entry] of Object.entries(item)) {
      if (SECRET_KEY.test(key)) {
        out[key] = REDACTED;
        continue;
      }
      const json = walk(entry, depth + 1);
      if (json !== undefined) out[key] = json;
    }
    return out;
  };
  return walk(value, 0);
}
