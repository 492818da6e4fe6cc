import { DomainError } from '../../domain/index.js';
import { MIGRATIONS, quoted, SCHEMA_VERSION } from './schema.js';
import type { SqlClient } from './sql-client.js';

/** `string_to_table` and column compression arrived in PostgreSQL 14. */
const MIN_SERVER_VERSION = 140000;

/**
 * Creates or migrates the store's schema, in one transaction under an advisory lock keyed by the
 * schema name: several nodes starting at once on an empty database serialize here, the first
 * creates the tables and the others find them at the current version. A database whose schema is
 * newer than this code is refused with `store_unavailable` (nothing is changed).
 * Resolves with the version found before migrating (0 for a new schema).
 */
export async function migrateSchema(sql: SqlClient, schema: string, location: string): Promise<number> {
  const s = quoted(schema);
  return sql.transaction(async (tx) => {
    const [server] = await tx.query("SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS version");
    if (Number(server?.['num']) < MIN_SERVER_VERSION) {
      throw new DomainError('store_unavailable', `PostgreSQL at ${location} is version ${String(server?.['version'])}; the store needs 14 or newer`);
    }
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`holon-xstate schema ${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_version (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version int NOT NULL,
        migrated_at timestamptz NOT NULL DEFAULT now())`,
    );
    const [row] = await tx.query(`SELECT version FROM ${s}.schema_version`);
    const found = row === undefined ? 0 : Number(row['version']);
    if (found > SCHEMA_VERSION) {
      throw new DomainError(
        'store_unavailable',
        `the database at ${location} has schema version ${found}, newer than this holon-xstate's (${SCHEMA_VERSION}): a newer release wrote it; run that release (or newer) against it, or point this one at another database`,
        { schema_version: found, supported_schema_version: SCHEMA_VERSION },
      );
    }
    for (let version = found + 1; version <= SCHEMA_VERSION; version += 1) {
      await tx.query((MIGRATIONS[version - 1] as (s: string, schema: string) => string)(s, schema));
    }
    if (found < SCHEMA_VERSION) {
      await tx.query(
        `INSERT INTO ${s}.schema_version (version) VALUES ($1)
         ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()`,
        [SCHEMA_VERSION],
      );
    }
    return found;
  });
}
