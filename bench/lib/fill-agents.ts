import { createHash } from 'node:crypto';
import type pg from 'pg';
import { progress } from './harness.js';
import { settleServer } from './pg-admin.js';

/** What one copy of the template is named: `<prefix><7 digits>`. */
export const copyId = (prefix: string, i: number): string => `${prefix}${String(i).padStart(7, '0')}`;

/** The base64url token hash a copy's roster lists (what `agentForTriggerHash` finds it by), as the fill computes it. */
export const copyHash = (prefix: string, i: number): string => createHash('sha256').update(`${prefix}${i}`).digest('base64url');

/**
 * Fills a PostgreSQL store with `count` copies of one sleeping agent the runtime created, at SQL
 * speed (creating a million through the runtime takes about an hour here): every row of the
 * template (`agents`, `agent_fields`, `events`, `agent_leases`; `lease_grants` by its trigger)
 * under a new id, with the id and its capability's token hash (hex in the document, base64url in
 * the roster) replaced in every text, so each copy is an agent of its own, found by its own hash.
 * The template's id must be unique as a substring of its rows (e.g. `template-0000`). Committed
 * events are not announced (no node listens while the store is filled).
 */
export async function fillWithCopies(client: pg.Client, schema: string, templateId: string, prefix: string, count: number, chunk = 20_000): Promise<number> {
  const s = `"${schema}"`;
  const [row] = (await client.query(`SELECT roster FROM ${s}.agents WHERE agent_id = $1`, [templateId])).rows as Array<{ roster: string }>;
  if (!row) throw new Error(`no template agent ${templateId}`);
  const b64 = (JSON.parse(row.roster) as { trigger_hashes: string[] }).trigger_hashes[0];
  if (b64 === undefined) throw new Error(`the template ${templateId} has no active capability`);
  const hex = Buffer.from(b64, 'base64url').toString('hex');
  const copies = `WITH n AS (SELECT i, '${prefix}' || lpad(i::text, 7, '0') AS id, sha256(convert_to('${prefix}' || i, 'UTF8')) AS h FROM generate_series($1::int, $2::int) AS i),
    m AS (SELECT id, encode(h, 'hex') AS hex, rtrim(translate(encode(h, 'base64'), '+/', '-_'), '=') AS b64 FROM n)`;
  const sub = (column: string): string => `replace(replace(replace(${column}, $3, m.id), $4, m.hex), $5, m.b64)`;
  const params = (from: number, to: number) => [from, to, templateId, hex, b64];
  const started = performance.now();
  await client.query(`ALTER TABLE ${s}.events DISABLE TRIGGER events_announced`);
  try {
    for (let from = 1; from <= count; from += chunk) {
      const to = Math.min(count, from + chunk - 1);
      await client.query('BEGIN');
      await client.query(
        `${copies} INSERT INTO ${s}.agents (agent_id, version, last_event_seq, roster, doc, fence, fencing_token)
         SELECT m.id, a.version, a.last_event_seq, ${sub('a.roster')}, ${sub('a.doc')}, a.fence, a.fencing_token FROM m, ${s}.agents a WHERE a.agent_id = $3`,
        params(from, to),
      );
      await client.query(
        `${copies} INSERT INTO ${s}.agent_fields (agent_id, name, ord, json, deltas)
         SELECT m.id, f.name, f.ord, ${sub('f.json')}, ${sub('f.deltas')} FROM m, ${s}.agent_fields f WHERE f.agent_id = $3`,
        params(from, to),
      );
      await client.query(
        `${copies} INSERT INTO ${s}.events (agent_id, event_seq, ts, type, payload, version, fence, fencing_token)
         SELECT m.id, e.event_seq, e.ts, e.type, ${sub('e.payload')}, e.version, e.fence, e.fencing_token FROM m, ${s}.events e WHERE e.agent_id = $3`,
        params(from, to),
      );
      await client.query(
        `${copies} INSERT INTO ${s}.agent_leases (agent_id, holder, fencing_token, acquired_at, expires_at, wake_at)
         SELECT m.id, l.holder, l.fencing_token, l.acquired_at, l.expires_at, l.wake_at FROM m, ${s}.agent_leases l WHERE l.agent_id = $3`,
        params(from, to).slice(0, 3),
      );
      await client.query('COMMIT');
      progress(`filled ${to}/${count} copies of ${templateId}, ${((to * 1000) / (performance.now() - started)).toFixed(0)} agents/s`);
    }
  } finally {
    await client.query(`ALTER TABLE ${s}.events ENABLE TRIGGER events_announced`);
  }
  await settleServer(client, schema);
  return (count * 1000) / (performance.now() - started);
}
