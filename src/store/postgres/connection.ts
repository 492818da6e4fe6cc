import { z } from 'zod';
import { DomainError } from '../../domain/index.js';

/**
 * Where the PostgreSQL store connects, parsed from a libpq-style URL:
 * `postgres://user:password@host:port/database` or, over a unix socket,
 * `postgres://user@/database?host=/var/run/postgresql` (the `host` parameter wins over the
 * authority, as in libpq). `schema` (default `holon`) names the PostgreSQL schema holding the
 * store's tables. Unknown parameters are refused rather than ignored.
 */
export const ConnectionConfig = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65_535),
  user: z.string().min(1),
  password: z.string().optional(),
  database: z.string().min(1),
  schema: z
    .string()
    .regex(/^(?!pg_)[a-z_][a-z0-9_]{0,62}$/, 'a schema name is lower-case letters, digits and _, not starting with pg_')
    .default('holon'),
});
export type ConnectionConfig = z.infer<typeof ConnectionConfig>;

const URL_SHAPE = /^(?:postgres|postgresql):\/\/(?:([^:@/?]*)(?::([^@/?]*))?@)?(\[[^\]]*\]|[^:/?]*)(?::(\d*))?(?:\/([^?]*))?(?:\?(.*))?$/;
const KNOWN_PARAMS = new Set(['host', 'port', 'user', 'password', 'dbname', 'schema']);

function decode(part: string | undefined): string | undefined {
  if (part === undefined || part === '') return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    throw new DomainError('invalid_request', 'the PostgreSQL URL has a malformed %-escape');
  }
}

/** Parses a `postgres://` URL; `invalid_request` with what is wrong (never echoing a password). */
export function parseConnectionUrl(url: string, defaults: { user?: string } = {}): ConnectionConfig {
  const match = URL_SHAPE.exec(url.trim());
  if (match === null) {
    throw new DomainError('invalid_request', 'the PostgreSQL URL must look like postgres://user:password@host:port/database');
  }
  const [, user, password, host, port, database, query] = match;
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) {
    if (!KNOWN_PARAMS.has(key)) throw new DomainError('invalid_request', `unknown PostgreSQL URL parameter ${JSON.stringify(key)} (known: ${[...KNOWN_PARAMS].join(', ')})`);
  }
  const authorityHost = decode(host)?.replace(/^\[(.*)\]$/, '$1');
  const candidate = {
    host: params.get('host') ?? authorityHost ?? 'localhost',
    port: Number(params.get('port') ?? (port || 5432)),
    user: params.get('user') ?? decode(user) ?? defaults.user ?? 'postgres',
    password: params.get('password') ?? decode(password),
    database: params.get('dbname') ?? decode(database) ?? '',
    schema: params.get('schema') ?? undefined,
  };
  const parsed = ConnectionConfig.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? 'url';
    throw new DomainError('invalid_request', `invalid PostgreSQL URL: ${field === 'database' ? 'no database named (postgres://…/<database>)' : `${field}: ${issue?.message ?? 'invalid'}`}`);
  }
  return parsed.data;
}

/** The URL without its password, for logs and `/handshake`. */
export function describeConnection(config: ConnectionConfig): string {
  const user = encodeURIComponent(config.user);
  const schema = config.schema === 'holon' ? '' : `schema=${config.schema}`;
  if (config.host.startsWith('/')) {
    const query = [`host=${config.host}`, ...(config.port === 5432 ? [] : [`port=${config.port}`]), ...(schema ? [schema] : [])].join('&');
    return `postgres://${user}@/${encodeURIComponent(config.database)}?${query}`;
  }
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `postgres://${user}@${host}:${config.port}/${encodeURIComponent(config.database)}${schema ? `?${schema}` : ''}`;
}

interface DriverError {
  code?: unknown;
  message?: unknown;
}

/**
 * A driver or server error as an operator reads it: `store_unavailable` saying what failed
 * (cannot reach the server, the password was refused, the database does not exist, ...) and
 * where, with the SQLSTATE or errno in `details.cause`. Never includes the password.
 */
export function storeUnavailable(config: ConnectionConfig, doing: string, err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  const where = describeConnection(config);
  const { code, message } = (typeof err === 'object' && err !== null ? err : {}) as DriverError;
  const text = typeof message === 'string' ? message : String(err);
  const cause = typeof code === 'string' ? code : undefined;
  const details = { location: where, ...(cause ? { cause } : {}) };
  switch (cause) {
    case 'ECONNREFUSED':
    case 'ENOENT':
      return new DomainError('store_unavailable', `cannot reach PostgreSQL at ${where}: connection refused (is the server running and listening there?)`, details);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new DomainError('store_unavailable', `cannot reach PostgreSQL at ${where}: host ${config.host} not found`, details);
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new DomainError('store_unavailable', `cannot reach PostgreSQL at ${where}: ${text}`, details);
    case '28P01':
      return new DomainError('store_unavailable', `PostgreSQL at ${where} refused the password of user "${config.user}" (password authentication failed)`, details);
    case '28000':
      return new DomainError('store_unavailable', `PostgreSQL at ${where} refused user "${config.user}": ${text}`, details);
    case '3D000':
      return new DomainError('store_unavailable', `database "${config.database}" does not exist on PostgreSQL at ${where} (create it, e.g. createdb ${config.database})`, details);
    case '42501':
      return new DomainError('store_unavailable', `user "${config.user}" lacks a privilege on ${where} while ${doing}: ${text}`, details);
    default:
      if (/timeout/i.test(text)) return new DomainError('store_unavailable', `cannot reach PostgreSQL at ${where}: no answer in time (${text})`, details);
      return new DomainError('store_unavailable', `PostgreSQL at ${where} failed while ${doing}: ${text}`, details);
  }
}
