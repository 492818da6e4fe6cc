import pg from 'pg';
import type { ConnectionConfig } from './connection.js';

/** A row as the driver returns it: `bigint` columns arrive as strings, `int` as numbers. */
export type Row = Record<string, unknown>;

/** What the store needs from a driver: pooled autocommit statements, and transactions on one connection. */
export interface SqlQuery {
  query(text: string, params?: unknown[]): Promise<Row[]>;
}

export interface SqlClient extends SqlQuery {
  /** BEGIN, `fn`, COMMIT on one connection; ROLLBACK when `fn` throws. */
  transaction<T>(fn: (tx: SqlQuery) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface PoolOptions {
  /** Connections kept at most (default 8): commits use one at a time, reads share the rest. */
  max?: number;
  /** Give up connecting after this long (default 10 s). */
  connectTimeoutMs?: number;
  /** The connections' `application_name` (default `holon-xstate`); announcements of committed events carry it. */
  applicationName?: string;
}

/**
 * The store's driver: node-postgres (`pg`), chosen over postgres.js by `npm run bench:pgstore`
 * (the same commit batches through both; see bench/BENCHMARKS.md). A pool; `text` values pass
 * as is, `bigint` values come back as strings.
 */
export function openPool(config: ConnectionConfig, options: PoolOptions = {}): SqlClient {
  const pool = new pg.Pool({
    host: config.host,
    port: config.port,
    user: config.user,
    database: config.database,
    ...(config.password === undefined ? {} : { password: config.password }),
    max: options.max ?? 8,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: options.applicationName ?? 'holon-xstate',
  });
  // An idle connection that dies (server restart) must not crash the process: the next query reconnects.
  pool.on('error', () => undefined);
  return {
    async query(text, params) {
      return (await pool.query(text, params)).rows as Row[];
    },
    async transaction(fn) {
      const client = await pool.connect();
      let broken = false;
      try {
        await client.query('BEGIN');
        const result = await fn({ query: async (text, params) => (await client.query(text, params)).rows as Row[] });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw error;
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}
