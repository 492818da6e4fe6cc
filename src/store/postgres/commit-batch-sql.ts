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
 *
 * Migration 1 creates it without field deltas and migration 6 with them (`fieldDeltaAppend`); the
 * text either creates never changes once released.
 */
export function commitBatchFunction(s: string, fieldDeltas: boolean): string {
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
