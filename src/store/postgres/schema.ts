import { DomainError } from '../../domain/index.js';
import { commitBatchFunction } from './commit-batch-sql.js';

/**
 * The PostgreSQL store's schema, as an ordered list of migrations. Migration `n` brings a
 * schema at version `n - 1` to `n`; `schema_version` records the version reached. Never edit a
 * released migration: append one.
 *
 * Every table lives in one PostgreSQL schema (default `holon`), so one database can hold several
 * stores (the tests use one schema per test). JSON values are kept as `text`: the store never
 * looks inside them, and text costs the server no parsing (and takes `\u0000`, which jsonb
 * refuses).
 */

/** Unquoted identifiers only: the schema name is put into SQL text. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema) || schema.startsWith('pg_')) {
    throw new DomainError('invalid_request', `invalid PostgreSQL schema name ${JSON.stringify(schema)}: lower-case letters, digits and _, not starting with pg_`);
  }
}

/** The version the code writes and reads. A database at a higher one is refused at open. */
export const SCHEMA_VERSION = 7;

/** Migration 1: the initial schema. */
function initial(s: string): string {
  return `
-- A document that is a plain record (every runtime document) is kept as its top-level fields in
-- agent_fields, so a commit writes only the fields it changed; any other JSON value is kept whole
-- in agents.doc (then agent_fields has none of it). Listing the roster reads the small agents rows
-- and never a document.
CREATE TABLE ${s}.agents (
  agent_id text COLLATE "C" PRIMARY KEY,
  version bigint NOT NULL,
  last_event_seq bigint NOT NULL,
  roster text,
  doc text,
  -- The fence of the commit that wrote this version ('s' store lease or 'a' agent lease, and its token).
  fence "char" NOT NULL,
  fencing_token bigint NOT NULL
) WITH (fillfactor = 80, toast_tuple_target = 128);
ALTER TABLE ${s}.agents ALTER COLUMN roster SET STORAGE MAIN;

CREATE TABLE ${s}.agent_fields (
  agent_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  ord int NOT NULL,
  json text NOT NULL,
  PRIMARY KEY (agent_id, name)
) WITH (fillfactor = 80);
-- lz4 compresses large fields in a third less server time than pglz (bench:pgstore), where the
-- server has it.
DO $lz4$ BEGIN
  ALTER TABLE ${s}.agents ALTER COLUMN doc SET COMPRESSION lz4;
  ALTER TABLE ${s}.agent_fields ALTER COLUMN json SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $lz4$;

-- Append-only (a trigger refuses UPDATE, DELETE and TRUNCATE). Each event also records the commit
-- that wrote it: the agent version it produced and its fence ('s' store lease or 'a' agent lease,
-- and the token), so a checker reading the database can verify that no write landed under a
-- token after a larger one was granted.
CREATE TABLE ${s}.events (
  agent_id text COLLATE "C" NOT NULL,
  event_seq bigint NOT NULL,
  ts text NOT NULL,
  type text NOT NULL,
  payload text NOT NULL,
  version bigint NOT NULL,
  fence "char" NOT NULL,
  fencing_token bigint NOT NULL,
  PRIMARY KEY (agent_id, event_seq)
);
CREATE FUNCTION ${s}.events_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'the holon-xstate event log is append-only (% on %)', TG_OP, TG_TABLE_NAME;
END
$fn$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON ${s}.events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.events_append_only();

CREATE TABLE ${s}.store_lease (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  holder text NOT NULL,
  fencing_token bigint NOT NULL,
  acquired_at text NOT NULL,
  expires_at text NOT NULL
);

CREATE TABLE ${s}.agent_leases (
  agent_id text COLLATE "C" PRIMARY KEY,
  holder text NOT NULL,
  fencing_token bigint NOT NULL,
  acquired_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX agent_leases_holder ON ${s}.agent_leases (holder);

CREATE TABLE ${s}.globals (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL
);
${commitBatchFunction(s, false)}`;
}

/**
 * Migration 2: the cluster's tables. A released agent lease may say when the agent's earliest
 * timer falls due (`wake_at`), and the nodes registry keeps each node's address and heartbeat.
 * The two partial indexes serve `claimDueAgents`: released agents by due time, unreleased leases
 * by expiry (the orphans of a node that stopped renewing).
 */
function cluster(s: string): string {
  return `
ALTER TABLE ${s}.agent_leases ADD COLUMN wake_at timestamptz;
CREATE INDEX agent_leases_wake ON ${s}.agent_leases (wake_at) WHERE expires_at = 'epoch' AND wake_at IS NOT NULL;
CREATE INDEX agent_leases_expiry ON ${s}.agent_leases (expires_at) WHERE expires_at > 'epoch';

CREATE TABLE ${s}.nodes (
  node_id text COLLATE "C" PRIMARY KEY,
  advertise_url text NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);`;
}

/**
 * Migration 3: every agent-lease grant, kept (`lease_grants`, append-only like the events). A
 * trigger writes a row whenever a lease row gets a new token (first acquire, takeover, claim of a
 * due or orphaned agent), with the agent's version at that moment: the grant waits for any commit
 * batch holding the lease row, so every commit the grant could fence has a version above
 * `at_version`. A checker reading the database (test/cluster/checker.ts) verifies from it that no
 * write landed under a token after a larger one was granted. Renewals and releases keep the token
 * and write nothing here. A lease that exists when the migration runs gets one row for its
 * current token (its earlier grants are unknown).
 */
function leaseGrants(s: string): string {
  return `
CREATE TABLE ${s}.lease_grants (
  agent_id text COLLATE "C" NOT NULL,
  fencing_token bigint NOT NULL,
  holder text NOT NULL,
  granted_at timestamptz NOT NULL,
  at_version bigint NOT NULL,
  PRIMARY KEY (agent_id, fencing_token)
);
CREATE TRIGGER lease_grants_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON ${s}.lease_grants
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.events_append_only();
CREATE FUNCTION ${s}.record_lease_grant() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.fencing_token IS DISTINCT FROM OLD.fencing_token THEN
    INSERT INTO ${s}.lease_grants (agent_id, fencing_token, holder, granted_at, at_version)
    VALUES (NEW.agent_id, NEW.fencing_token, NEW.holder, NEW.acquired_at,
      COALESCE((SELECT a.version FROM ${s}.agents a WHERE a.agent_id = NEW.agent_id), 0));
  END IF;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER agent_leases_record_grant AFTER INSERT OR UPDATE OF fencing_token ON ${s}.agent_leases
  FOR EACH ROW EXECUTE FUNCTION ${s}.record_lease_grant();
-- Leases granted before this migration: their current token, as granted at the agent's version now.
INSERT INTO ${s}.lease_grants (agent_id, fencing_token, holder, granted_at, at_version)
SELECT l.agent_id, l.fencing_token, l.holder, l.acquired_at, COALESCE(a.version, 0)
FROM ${s}.agent_leases l LEFT JOIN ${s}.agents a ON a.agent_id = l.agent_id;`;
}

/**
 * Migration 4: committed events are announced (issue 19: "the global stream on any node carries
 * every agent's events"). A statement-level trigger on `events` sends, in the committing
 * transaction, one `NOTIFY` per insert into `events` (one per round of a commit batch, `commit_batch`) on the channel `EVENTS_CHANNEL`: the schema and
 * the committing connection's `application_name` (which names the store instance) on the first
 * line, then one `agent_id first_seq last_seq` line per agent, split over several notifications when
 * longer than 7,000 bytes (PostgreSQL's payload limit is 8,000). PostgreSQL delivers them only on
 * commit, in commit order. Listeners read the events themselves by sequence.
 */
function eventsAnnounced(s: string, schema: string): string {
  return `
${announceEventsFunction(s, schema, false)}
CREATE TRIGGER events_announced AFTER INSERT ON ${s}.events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.announce_events();`;
}

/** The trigger function of migration 4; from migration 7 on, gated on a watcher other than the committer. */
function announceEventsFunction(s: string, schema: string, gated: boolean): string {
  const gate = `
  IF NOT EXISTS (
    SELECT 1 FROM ${s}.event_watchers w
    WHERE w.expires_at > statement_timestamp() AND w.watcher IS DISTINCT FROM current_setting('application_name', true)) THEN
    RETURN NULL;
  END IF;`;
  return `
CREATE ${gated ? 'OR REPLACE ' : ''}FUNCTION ${s}.announce_events() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  head text := '${schema} ' || COALESCE(current_setting('application_name', true), '');
  chunk text := '';
  line text;
BEGIN${gated ? gate : ''}
  FOR line IN SELECT agent_id || ' ' || min(event_seq) || ' ' || max(event_seq) FROM new_events GROUP BY agent_id LOOP
    IF length(chunk) + length(line) > 7000 THEN
      PERFORM pg_notify('${EVENTS_CHANNEL}', head || chunk);
      chunk := '';
    END IF;
    chunk := chunk || E'\n' || line;
  END LOOP;
  IF chunk <> '' THEN PERFORM pg_notify('${EVENTS_CHANNEL}', head || chunk); END IF;
  RETURN NULL;
END
$fn$;`;
}

/**
 * Migration 5: a capability URL finds its agent without any node keeping every roster entry in
 * memory (a cluster node loads nothing per agent at boot). `roster_trigger_hashes` reads the one
 * key of a roster entry the store looks at, `trigger_hashes`, out of its JSON text (base64url
 * hashes: no escapes, no `]`; an escaped key inside a string never matches) without parsing it
 * (jsonb would refuse a `\u0000` elsewhere in the entry). `agent_capabilities` holds one row per
 * (hash, agent), kept by row triggers on `agents` that fire only when the hashes changed: an index
 * over `agents.roster` itself would make every commit's update non-HOT (the roster changes with
 * nearly every commit), and the update trigger's condition is two `split_part`s, not the regular
 * expression, which cost a quarter of the commit rate (bench/BENCHMARKS.md, stop 26).
 */
function triggerHashes(s: string): string {
  return `
CREATE FUNCTION ${s}.roster_trigger_hashes(roster text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT COALESCE(string_to_array(NULLIF(replace((regexp_match(roster, '"trigger_hashes":\\[([^\\]]*)\\]'))[1], '"', ''), ''), ','), '{}'::text[])
$fn$;
CREATE TABLE ${s}.agent_capabilities (
  token_hash text COLLATE "C" NOT NULL,
  agent_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (token_hash, agent_id)
);
CREATE INDEX agent_capabilities_agent ON ${s}.agent_capabilities (agent_id);
CREATE FUNCTION ${s}.index_capabilities() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  hashes text[] := ${s}.roster_trigger_hashes(NEW.roster);
BEGIN
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM ${s}.agent_capabilities c WHERE c.agent_id = NEW.agent_id AND c.token_hash <> ALL (hashes);
  END IF;
  INSERT INTO ${s}.agent_capabilities (token_hash, agent_id) SELECT DISTINCT h, NEW.agent_id FROM unnest(hashes) AS h
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER agents_capabilities_created AFTER INSERT ON ${s}.agents FOR EACH ROW
  WHEN (NEW.roster IS NOT NULL) EXECUTE FUNCTION ${s}.index_capabilities();
CREATE TRIGGER agents_capabilities_changed AFTER UPDATE OF roster ON ${s}.agents FOR EACH ROW
  WHEN (split_part(split_part(OLD.roster, '"trigger_hashes":', 2), ']', 1) IS DISTINCT FROM split_part(split_part(NEW.roster, '"trigger_hashes":', 2), ']', 1))
  EXECUTE FUNCTION ${s}.index_capabilities();
INSERT INTO ${s}.agent_capabilities (token_hash, agent_id)
  SELECT DISTINCT h, a.agent_id FROM ${s}.agents a, unnest(${s}.roster_trigger_hashes(a.roster)) AS h;`;
}

/** `commit_batch`'s argument types up to migration 5 (a function is dropped by its signature). */
const COMMIT_BATCH_V1_ARGS = 'int[], bigint[], bigint[], bigint[], int[], int[], text, text, text, int[], int[], text, text, text, int[], int[], text, text, text, text';

/**
 * Migration 6: a list or record field that changed by a few entries is written as a `FieldDelta`
 * (doc-json.ts) appended to `agent_fields.deltas`, one per line, instead of whole: an agent's queue
 * of tens of messages was rewritten (and TOASTed, and WAL-logged) on every commit that touched one
 * message. A reader lays the deltas over `json` in order; the writer sends the whole field again
 * after a bounded number of them (`CommitBatcher`), which clears `deltas`.
 */
function fieldDeltas(s: string): string {
  return `
ALTER TABLE ${s}.agent_fields ADD COLUMN deltas text;
DROP FUNCTION ${s}.commit_batch(${COMMIT_BATCH_V1_ARGS});
${commitBatchFunction(s, true)}`;
}

/**
 * Migration 7: events are announced only while a store instance other than the committing one
 * watches them (`event_watchers`: one row per watching instance, by its `application_name`, with
 * an expiry it renews). PostgreSQL serializes every transaction that sent a `NOTIFY` through one
 * lock held until its commit is flushed, so announcing every batch kept the cluster's commits from
 * sharing WAL flushes while nobody listened (bench/BENCHMARKS.md, stop 27).
 */
function announcedWhileWatched(s: string, schema: string): string {
  return `
CREATE TABLE ${s}.event_watchers (
  watcher text COLLATE "C" PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
${announceEventsFunction(s, schema, true)}`;
}

/** The channel every schema's committed events are announced on (migration 4); the payload names the schema. */
export const EVENTS_CHANNEL = 'holon_events';

/** `MIGRATIONS[n - 1]` is migration `n`; given the quoted schema name and the bare one. */
export const MIGRATIONS: ReadonlyArray<(s: string, schema: string) => string> = [initial, cluster, leaseGrants, eventsAnnounced, triggerHashes, fieldDeltas, announcedWhileWatched];

/** The quoted schema name as it appears in SQL. */
export function quoted(schema: string): string {
  assertSchemaName(schema);
  return `"${schema}"`;
}
