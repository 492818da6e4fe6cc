import { DomainError } from '../../domain/index.js';

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
export const SCHEMA_VERSION = 6;

/**
 * The group-commit function: one call commits a whole batch in one transaction (one round trip,
 * one WAL flush). Numbers come as arrays; strings as one text each, the batch's values joined by
 * `\n` (JSON.stringify never emits a raw newline, and ids, types and times have none): PostgreSQL
 * splits them with `string_to_table` several times faster than it parses a `text[]` literal of
 * escaped JSON. An empty roster means "keep the previous entry". `c_round` is the commit's position
 * among the batch's commits to the same agent (1 for the first), so round `r` touches each agent
 * at most once and sees what round `r - 1` wrote. Per commit, in order: the fence (the store
 * lease's token, or the agent lease's), then compare-and-set on the version; a commit that fails
 * either writes nothing and fails alone. Returns one row per commit.
 *
 * Locks are taken in one order everywhere (store lease, agent leases by id, then agent rows), so
 * a commit batch and a lease change cannot deadlock; the lease rows are held FOR SHARE to the end
 * of the transaction, so a takeover either waits for the batch or fences it.
 */
function commitBatchFunction(s: string, fieldDeltas: boolean): string {
  return `
CREATE FUNCTION ${s}.commit_batch(
  c_round int[], c_expected bigint[], c_store_token bigint[], c_agent_token bigint[], c_events int[], c_mode int[],
  c_agent text, c_doc text, c_roster text,
  f_round int[], f_ord int[], f_agent text, f_name text, f_json text,${fieldDeltas ? ' f_delta boolean[],' : ''}
  e_round int[], e_ord int[], e_agent text, e_ts text, e_type text, e_payload text)
RETURNS TABLE (idx int, outcome text, version bigint, base_seq bigint, current_version bigint, current_token bigint, current_holder text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  rounds int := COALESCE((SELECT max(x) FROM unnest(c_round) AS x), 0);
BEGIN
  IF EXISTS (SELECT 1 FROM unnest(c_store_token) AS t WHERE t IS NOT NULL) THEN
    PERFORM 1 FROM ${s}.store_lease FOR SHARE;
  END IF;
  IF EXISTS (SELECT 1 FROM unnest(c_agent_token) AS t WHERE t IS NOT NULL) THEN
    PERFORM 1 FROM ${s}.agent_leases l
      WHERE l.agent_id IN (
        SELECT u.a FROM ROWS FROM (string_to_table(c_agent, E'\\n'), unnest(c_agent_token)) AS u(a, t) WHERE u.t IS NOT NULL)
      ORDER BY l.agent_id FOR SHARE;
  END IF;
  FOR r IN 1..rounds LOOP
    RETURN QUERY
    WITH c AS (
      SELECT u.* FROM ROWS FROM (
          unnest(c_round), string_to_table(c_agent, E'\\n'), unnest(c_expected), unnest(c_store_token), unnest(c_agent_token),
          unnest(c_mode), string_to_table(c_doc, E'\\n'), string_to_table(c_roster, E'\\n'), unnest(c_events))
        WITH ORDINALITY AS u(round, agent_id, expected, store_token, agent_token, mode, doc, roster, n_events, idx)
      WHERE u.round = r
    ),
    f AS (
      SELECT c.idx, c.agent_id,
        CASE WHEN c.store_token IS NOT NULL THEN c.store_token IS NOT DISTINCT FROM sl.fencing_token
             ELSE c.agent_token IS NOT DISTINCT FROM al.fencing_token END AS passed,
        CASE WHEN c.store_token IS NOT NULL THEN sl.fencing_token ELSE al.fencing_token END AS token,
        CASE WHEN c.store_token IS NOT NULL THEN sl.holder ELSE al.holder END AS holder
      FROM c
      LEFT JOIN ${s}.store_lease sl ON c.store_token IS NOT NULL
      LEFT JOIN ${s}.agent_leases al ON c.agent_token IS NOT NULL AND al.agent_id = c.agent_id
    ),
    ok AS (SELECT c.* FROM c JOIN f ON f.idx = c.idx WHERE f.passed),
    upd AS (
      UPDATE ${s}.agents a
      SET version = a.version + 1, doc = CASE WHEN ok.mode = 2 THEN ok.doc END, roster = COALESCE(NULLIF(ok.roster, ''), a.roster),
        last_event_seq = a.last_event_seq + ok.n_events,
        fence = CASE WHEN ok.store_token IS NOT NULL THEN 's' ELSE 'a' END, fencing_token = COALESCE(ok.store_token, ok.agent_token)
      FROM ok
      WHERE ok.expected IS NOT NULL AND a.agent_id = ok.agent_id AND a.version = ok.expected
      RETURNING a.agent_id, a.version, a.last_event_seq - ok.n_events AS base, a.fence, a.fencing_token
    ),
    ins AS (
      INSERT INTO ${s}.agents (agent_id, version, last_event_seq, roster, doc, fence, fencing_token)
      SELECT ok.agent_id, 1, ok.n_events, NULLIF(ok.roster, ''), CASE WHEN ok.mode = 2 THEN ok.doc END,
        CASE WHEN ok.store_token IS NOT NULL THEN 's' ELSE 'a' END, COALESCE(ok.store_token, ok.agent_token)
      FROM ok WHERE ok.expected IS NULL
      ON CONFLICT (agent_id) DO NOTHING
      RETURNING agents.agent_id, agents.version, 0::bigint AS base, agents.fence, agents.fencing_token
    ),
    w AS (SELECT * FROM upd UNION ALL SELECT * FROM ins),
    fl AS (
      SELECT fr.agent_id, fr.name, fr.ord, fr.json${fieldDeltas ? ', fr.delta' : ''}
      FROM ROWS FROM (
          unnest(f_round), unnest(f_ord), string_to_table(f_agent, E'\\n'), string_to_table(f_name, E'\\n'),
          string_to_table(f_json, E'\\n')${fieldDeltas ? ', unnest(f_delta)' : ''})
        AS fr(round, ord, agent_id, name, json${fieldDeltas ? ', delta' : ''})
      WHERE fr.round = r
    ),
    fdel AS (
      DELETE FROM ${s}.agent_fields af USING c, w
      WHERE w.agent_id = c.agent_id AND af.agent_id = c.agent_id AND c.mode > 0
        AND NOT EXISTS (SELECT 1 FROM fl WHERE fl.agent_id = af.agent_id AND fl.name = af.name)
    ),
    fput AS (
      INSERT INTO ${s}.agent_fields (agent_id, name, ord, json)
      SELECT fl.agent_id, fl.name, fl.ord, fl.json FROM fl JOIN w ON w.agent_id = fl.agent_id${fieldDeltas ? ' WHERE NOT fl.delta' : ''}
      ON CONFLICT (agent_id, name) DO UPDATE SET ord = EXCLUDED.ord, json = EXCLUDED.json${fieldDeltas ? ', deltas = NULL' : ''}
    ),${fieldDeltas ? fieldDeltaAppend(s) : ''}
    ev AS (
      INSERT INTO ${s}.events (agent_id, event_seq, ts, type, payload, version, fence, fencing_token)
      SELECT e.agent_id, w.base + e.ord, e.ts, e.type, e.payload, w.version, w.fence, w.fencing_token
      FROM ROWS FROM (
          unnest(e_round), unnest(e_ord), string_to_table(e_agent, E'\\n'), string_to_table(e_ts, E'\\n'),
          string_to_table(e_type, E'\\n'), string_to_table(e_payload, E'\\n'))
        AS e(round, ord, agent_id, ts, type, payload)
      JOIN w ON w.agent_id = e.agent_id
      WHERE e.round = r
    )
    SELECT c.idx::int,
      CASE WHEN w.agent_id IS NOT NULL THEN 'ok' WHEN NOT f.passed THEN 'fenced' ELSE 'conflict' END,
      w.version, w.base,
      (SELECT a.version FROM ${s}.agents a WHERE a.agent_id = c.agent_id),
      f.token, f.holder
    FROM c JOIN f ON f.idx = c.idx LEFT JOIN w ON w.agent_id = c.agent_id;
  END LOOP;
END
$fn$;`;
}

/**
 * Migration 6's part of `commit_batch`: a field sent as a `FieldDelta` (`f_delta`) is appended to
 * its row's `deltas` (one per line) and leaves `json` as it was, so PostgreSQL keeps the stored
 * (TOASTed) value and writes only the row and its few hundred bytes of delta.
 */
function fieldDeltaAppend(s: string): string {
  return `
    fpatch AS (
      UPDATE ${s}.agent_fields af SET ord = fl.ord, deltas = COALESCE(af.deltas || E'\\n', '') || fl.json
      FROM fl JOIN w ON w.agent_id = fl.agent_id
      WHERE fl.delta AND af.agent_id = fl.agent_id AND af.name = fl.name
    ),`;
}

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
CREATE FUNCTION ${s}.announce_events() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  head text := '${schema} ' || COALESCE(current_setting('application_name', true), '');
  chunk text := '';
  line text;
BEGIN
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
$fn$;
CREATE TRIGGER events_announced AFTER INSERT ON ${s}.events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.announce_events();`;
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

/** The channel every schema's committed events are announced on (migration 4); the payload names the schema. */
export const EVENTS_CHANNEL = 'holon_events';

/** `MIGRATIONS[n - 1]` is migration `n`; given the quoted schema name and the bare one. */
export const MIGRATIONS: ReadonlyArray<(s: string, schema: string) => string> = [initial, cluster, leaseGrants, eventsAnnounced, triggerHashes, fieldDeltas];

/** The quoted schema name as it appears in SQL. */
export function quoted(schema: string): string {
  assertSchemaName(schema);
  return `"${schema}"`;
}
