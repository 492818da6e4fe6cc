import { randomUUID } from 'node:crypto';
import { DomainError } from '../../domain/index.js';
import type { AgentEvent, EventType } from '../../domain/index.js';
import { assertAgentId, commitFence, eventId } from '../shared/commit-rules.js';
import { assertFence } from '../shared/lease-rules.js';
import { applyFieldDelta, FieldDelta } from '../shared/doc-json.js';
import { assertRosterQuery } from '../shared/roster-query.js';
import { toJson } from '../shared/to-json.js';
import { EventAnnouncements } from './event-announcements.js';
import type {
  AgentLease,
  AgentLeaseState,
  AgentLocation,
  Commit,
  CommitResult,
  CommittedEventsWatch,
  CommittedRange,
  EventPage,
  EventPageQuery,
  HeldAgentLease,
  Lease,
  NodeRecord,
  RenewedAgentLeases,
  RosterEntry,
  RosterPage,
  RosterQuery,
  Store,
  StoredAgent,
} from '../store.js';
import { CommitBatcher } from './commit-batch.js';
import { describeConnection, parseConnectionUrl, storeUnavailable } from './connection.js';
import type { ConnectionConfig } from './connection.js';
import { AgentLeaseTable, StoreLeaseTable } from './leases.js';
import { migrateSchema } from './migrate.js';
import { NodeTable } from './nodes.js';
import { quoted } from './schema.js';
import { openPool } from './sql-client.js';
import type { PoolOptions, Row, SqlClient } from './sql-client.js';

export interface PostgresStoreOptions extends PoolOptions {
  /** `postgres://user:password@host:port/database` (see `connection.ts`). */
  url: string;
  /** The PostgreSQL schema holding the tables; overrides the URL's `schema` (default `holon`). */
  schema?: string;
}

/**
 * The multi-node store: every commit batch is one transaction through one `commit_batch` call
 * (group commit across agents), the event log an append-only table with dense per-agent
 * sequences, agent leases rows on the database's clock. See `src/store/README.md`.
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly location: string;

  private readonly config: ConnectionConfig;
  private readonly s: string;
  private readonly poolOptions: PoolOptions;
  private sql: SqlClient | null = null;
  private storeLease: StoreLeaseTable | null = null;
  private agentLeases: AgentLeaseTable | null = null;
  private nodes: NodeTable | null = null;
  private batcher: CommitBatcher | null = null;
  private state: 'closed' | 'opening' | 'open' | 'closing' = 'closed';
  /** Names this instance's connections, so the announcements of its own commits are told apart. */
  private readonly instanceName = `holon-xstate:${randomUUID().slice(0, 8)}`;
  private announcements: EventAnnouncements | null = null;

  constructor(options: PostgresStoreOptions) {
    const parsed = parseConnectionUrl(options.url);
    this.config = options.schema === undefined ? parsed : { ...parsed, schema: options.schema };
    this.s = quoted(this.config.schema);
    this.location = describeConnection(this.config);
    this.poolOptions = {
      ...(options.max === undefined ? {} : { max: options.max }),
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
      applicationName: this.instanceName,
    };
  }

  /** Connects, and creates or migrates the schema (safe when several nodes open at once). */
  async open(): Promise<void> {
    if (this.state === 'open') return;
    if (this.state !== 'closed') throw this.unavailable(`is ${this.state}`);
    this.state = 'opening';
    const sql = openPool(this.config, this.poolOptions);
    const announcements = new EventAnnouncements(this.config, this.instanceName, sql, this.s);
    try {
      await migrateSchema(sql, this.config.schema, this.location);
      await announcements.start();
    } catch (err) {
      this.state = 'closed';
      await announcements.close();
      await sql.close().catch(() => undefined);
      throw this.failed('opening the store', err);
    }
    this.sql = sql;
    this.announcements = announcements;
    this.storeLease = new StoreLeaseTable(sql, this.s, this.config.schema);
    this.agentLeases = new AgentLeaseTable(sql, this.s);
    this.nodes = new NodeTable(sql, this.s);
    this.batcher = new CommitBatcher(sql, this.s, (doing, err) => this.failed(doing, err));
    this.state = 'open';
  }

  /** Finishes the queued commits and closes the connections; releases no lease. */
  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    try {
      await this.announcements?.close();
      await this.batcher?.idle();
      await this.sql?.close();
    } finally {
      this.announcements = null;
      this.sql = null;
      this.batcher = null;
      this.state = 'closed';
    }
  }

  watchCommittedEvents(listener: (range: CommittedRange) => void): CommittedEventsWatch {
    if (this.announcements === null) throw this.unavailable('is not open');
    return this.announcements.watch(listener);
  }

  acquireLease(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    return this.run('acquiring the write lease', () => this.leases().acquire(holder, ttl_ms, now));
  }

  renewLease(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    return this.run('renewing the write lease', () => this.leases().renew(lease, ttl_ms, now));
  }

  releaseLease(lease: Lease): Promise<void> {
    return this.run('releasing the write lease', () => this.leases().release(lease));
  }

  readLease(): Promise<Lease | null> {
    return this.run('reading the write lease', () => this.leases().read());
  }

  acquireAgentLease(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease> {
    return this.run(`acquiring agent ${agent_id}'s lease`, () => this.agentLeaseTable().acquire(agent_id, holder, ttl_ms));
  }

  renewAgentLeases(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases> {
    return this.run(`renewing ${leases.length} agent leases`, () => this.agentLeaseTable().renew(holder, leases, ttl_ms));
  }

  releaseAgentLease(lease: AgentLease, wake_at: string | null = null): Promise<void> {
    return this.run(`releasing agent ${lease.agent_id}'s lease`, () => this.agentLeaseTable().release(lease, wake_at));
  }

  readAgentLease(agent_id: string): Promise<AgentLeaseState | null> {
    return this.run(`reading agent ${agent_id}'s lease`, () => this.agentLeaseTable().read(agent_id));
  }

  claimDueAgents(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]> {
    return this.run('claiming due agents', () => this.agentLeaseTable().claimDue(holder, ttl_ms, limit));
  }

  heartbeatNode(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord> {
    return this.run(`registering node ${node_id}`, () => this.nodeTable().heartbeat(node_id, advertise_url, ttl_ms));
  }

  removeNode(node_id: string): Promise<void> {
    return this.run(`removing node ${node_id}`, () => this.nodeTable().remove(node_id));
  }

  listLiveNodes(): Promise<NodeRecord[]> {
    return this.run('listing live nodes', () => this.nodeTable().live());
  }

  locateAgent(agent_id: string): Promise<AgentLocation | null> {
    return this.run(`locating agent ${agent_id}`, () => this.agentLeaseTable().locate(agent_id));
  }

  async listAgentIds(): Promise<string[]> {
    const rows = await this.query('listing agents', `SELECT agent_id FROM ${this.s}.agents ORDER BY agent_id`);
    return rows.map((row) => String(row['agent_id']));
  }

  /** Reads the small rows only: documents live out of line (TOAST) and are never fetched here. */
  async listRoster(): Promise<RosterEntry[]> {
    const rows = await this.query('listing the roster', `SELECT agent_id, version, roster FROM ${this.s}.agents ORDER BY agent_id`);
    return rows.map(rosterEntryOf);
  }

  /** The primary key's order from the cursor; the filters are substring tests the server runs. */
  async listRosterPage(query: RosterQuery): Promise<RosterPage> {
    assertRosterQuery(query);
    const rows = await this.query(
      'listing a roster page',
      `SELECT agent_id, version, roster FROM ${this.s}.agents
       WHERE ($1::text IS NULL OR agent_id > $1)
         AND ($2::text IS NULL OR strpos(lower(agent_id), $2) > 0)
         AND ($3::text IS NULL OR strpos(roster, $3) > 0)
       ORDER BY agent_id LIMIT $4`,
      [query.after ?? null, query.id_contains?.toLowerCase() ?? null, query.roster_contains ?? null, query.limit + 1],
    );
    return { entries: rows.slice(0, query.limit).map(rosterEntryOf), more: rows.length > query.limit };
  }

  /** A primary-key lookup in `agent_capabilities` (migration 5). */
  async agentForTriggerHash(hash: string): Promise<string | null> {
    const [row] = await this.query('finding a capability\'s agent', `SELECT agent_id FROM ${this.s}.agent_capabilities WHERE token_hash = $1 ORDER BY agent_id LIMIT 1`, [hash]);
    return row === undefined ? null : String(row['agent_id']);
  }

  async loadAgent(agent_id: string): Promise<StoredAgent | null> {
    assertAgentId(agent_id);
    // A record is assembled from its fields (keys and values are JSON text already); a field with
    // deltas (migration 6) holds its place as `null` and comes whole with them in `patched`.
    const [row] = await this.query(
      `loading agent ${agent_id}`,
      `SELECT a.version, a.last_event_seq, COALESCE(a.doc, '{' || COALESCE(
         (SELECT string_agg(f.name || ':' || CASE WHEN f.deltas IS NULL THEN f.json ELSE 'null' END, ',' ORDER BY f.ord)
          FROM ${this.s}.agent_fields f WHERE f.agent_id = a.agent_id), '') || '}') AS doc,
         (SELECT string_agg(f.name || E'\n' || f.json || E'\n' || f.deltas, E'\n\n')
          FROM ${this.s}.agent_fields f WHERE f.agent_id = a.agent_id AND f.deltas IS NOT NULL AND a.doc IS NULL) AS patched
       FROM ${this.s}.agents a WHERE a.agent_id = $1`,
      [agent_id],
    );
    if (row === undefined) return null;
    const doc = JSON.parse(String(row['doc'])) as unknown;
    if (row['patched'] !== null) applyFieldDeltas(agent_id, doc as Record<string, unknown>, String(row['patched']));
    return { version: Number(row['version']), last_event_seq: Number(row['last_event_seq']), doc };
  }

  /** Drops the agent's last committed document: its next commit writes the whole of it. */
  evictAgent(agent_id: string): void {
    assertAgentId(agent_id);
    this.batcher?.forget(agent_id);
  }

  commit(commit: Commit): Promise<CommitResult> {
    try {
      const batcher = this.commits();
      assertAgentId(commit.agent_id);
      const fence = commitFence(commit);
      // The batch joins its strings with newlines (see commit-batch.ts): JSON text never holds a raw one.
      for (const event of commit.events) {
        if (/\n/.test(event.ts) || /\n/.test(event.type)) throw new DomainError('invalid_request', `an event's ts and type must be one line (agent ${commit.agent_id})`);
      }
      // Serialized here, so a roster entry or payload that is not JSON fails its own commit before
      // it is queued; the document in the batch, as the fields it changed (see CommitBatcher).
      return batcher.push({
        agent_id: commit.agent_id,
        expected_version: commit.expected_version,
        fence,
        doc: commit.doc,
        rosterJson: commit.roster === undefined ? undefined : toJson('roster entry', () => JSON.stringify(commit.roster)),
        events: commit.events.map((event) => ({
          type: event.type,
          ts: event.ts,
          payloadJson: toJson(`payload of ${event.type}`, () => JSON.stringify(event.payload)),
        })),
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The page and the retained window from one statement (one snapshot). */
  async readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage> {
    assertAgentId(agent_id);
    const limit = Math.max(0, Math.floor(query.limit));
    const order = query.order === 'desc' ? 'DESC' : 'ASC';
    const rows = await this.query(
      `reading events of agent ${agent_id}`,
      `SELECT a.last_event_seq, e.event_seq, e.ts, e.type, e.payload
       FROM ${this.s}.agents a
       LEFT JOIN LATERAL (
         SELECT event_seq, ts, type, payload FROM ${this.s}.events
         WHERE agent_id = a.agent_id AND event_seq > $2 AND event_seq < $3
         ORDER BY event_seq ${order} LIMIT $4) e ON true
       WHERE a.agent_id = $1`,
      [agent_id, query.after_seq ?? 0, query.before_seq ?? Number.MAX_SAFE_INTEGER, limit],
    );
    const newest_seq = rows.length === 0 ? 0 : Number(rows[0]?.['last_event_seq']);
    const events = rows
      .filter((row) => row['event_seq'] !== null)
      .map((row): AgentEvent => {
        const event_seq = Number(row['event_seq']);
        return {
          id: eventId(agent_id, event_seq),
          event_seq,
          ts: String(row['ts']),
          agent_id,
          type: String(row['type']) as EventType,
          payload: JSON.parse(String(row['payload'])) as Record<string, unknown>,
        };
      });
    // Nothing deletes events, so the retained window starts at the first.
    return { events, oldest_seq: newest_seq === 0 ? 0 : 1, newest_seq };
  }

  async getGlobal(key: string): Promise<unknown> {
    const [row] = await this.query('reading a global record', `SELECT value FROM ${this.s}.globals WHERE key = $1`, [key]);
    return row === undefined ? undefined : (JSON.parse(String(row['value'])) as unknown);
  }

  /** One statement: the fence (the store lease row, held FOR SHARE) and the write. */
  async putGlobal(key: string, value: unknown, fencing_token: number): Promise<void> {
    const json = value === undefined ? null : toJson(`global record ${key}`, () => JSON.stringify(value));
    const fence = `f AS (SELECT fencing_token FROM ${this.s}.store_lease WHERE fencing_token = $2 FOR SHARE)`;
    const [row] = await this.query(
      'writing a global record',
      json === null
        ? `WITH ${fence}, d AS (DELETE FROM ${this.s}.globals WHERE key = $1 AND EXISTS (SELECT 1 FROM f)) SELECT count(*) AS fenced_ok FROM f`
        : `WITH ${fence}, w AS (INSERT INTO ${this.s}.globals (key, value) SELECT $1, $3 FROM f
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value) SELECT count(*) AS fenced_ok FROM f`,
      json === null ? [key, fencing_token] : [key, fencing_token, json],
    );
    if (Number(row?.['fenced_ok']) === 0) {
      assertFence(await this.readLease(), fencing_token, undefined);
      // The token is current now but was not when the statement ran: nothing was written.
      throw new DomainError('lease_lost', `the write lease changed while writing global record ${key}; nothing was written`, { fencing_token });
    }
  }

  /**
   * One statement: the fence (the agent's lease row, held FOR SHARE) and an insert that keeps an
   * existing value. A concurrent insert of the same key wins or loses on the primary key; the
   * loser reads the winner's value.
   */
  async putGlobalOnce(key: string, value: unknown, fence: { agent_id: string; agent_fencing_token: number }): Promise<unknown> {
    const json = toJson(`global record ${key}`, () => JSON.stringify(value));
    const [row] = await this.query(
      'writing a global record once',
      `WITH f AS (SELECT 1 FROM ${this.s}.agent_leases WHERE agent_id = $2 AND fencing_token = $3 FOR SHARE),
            w AS (INSERT INTO ${this.s}.globals (key, value) SELECT $1, $4 FROM f ON CONFLICT (key) DO NOTHING RETURNING value)
       SELECT (SELECT count(*) FROM f) AS fenced_ok, (SELECT value FROM w) AS written`,
      [key, fence.agent_id, fence.agent_fencing_token, json],
    );
    if (Number(row?.['fenced_ok']) === 0) {
      throw new DomainError('lease_lost', `agent ${fence.agent_id} is not held under token ${fence.agent_fencing_token}; global record ${key} was not written`, { agent_id: fence.agent_id, fencing_token: fence.agent_fencing_token });
    }
    if (row?.['written'] !== null && row?.['written'] !== undefined) return value;
    return this.getGlobal(key);
  }

  private run<T>(doing: string, fn: () => Promise<T>): Promise<T> {
    try {
      return fn().catch((err: unknown) => {
        throw this.failed(doing, err);
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async query(doing: string, text: string, params?: unknown[]): Promise<Row[]> {
    const sql = this.connected();
    try {
      return await sql.query(text, params);
    } catch (err) {
      throw this.failed(doing, err);
    }
  }

  private failed(doing: string, err: unknown): DomainError {
    return storeUnavailable(this.config, doing, err);
  }

  private connected(): SqlClient {
    if (this.state !== 'open' || this.sql === null) throw this.unavailable(this.state === 'closing' ? 'is closing' : 'is not open');
    return this.sql;
  }

  private leases(): StoreLeaseTable {
    this.connected();
    return this.storeLease as StoreLeaseTable;
  }

  private agentLeaseTable(): AgentLeaseTable {
    this.connected();
    return this.agentLeases as AgentLeaseTable;
  }

  private nodeTable(): NodeTable {
    this.connected();
    return this.nodes as NodeTable;
  }

  private commits(): CommitBatcher {
    this.connected();
    return this.batcher as CommitBatcher;
  }

  private unavailable(why: string): DomainError {
    return new DomainError('store_unavailable', `store ${this.location} ${why}`);
  }
}

function rosterEntryOf(row: Record<string, unknown>): RosterEntry {
  return { agent_id: String(row['agent_id']), version: Number(row['version']), roster: row['roster'] === null ? null : (JSON.parse(String(row['roster'])) as unknown) };
}

/**
 * Lays each field's deltas over its stored value, in `doc` (`patched`: per field, its JSON name,
 * its value and its deltas on lines of their own; fields apart by an empty line).
 */
function applyFieldDeltas(agent_id: string, doc: Record<string, unknown>, patched: string): void {
  for (const field of patched.split('\n\n')) {
    const [name, json, ...deltas] = field.split('\n');
    const key = JSON.parse(name as string) as string;
    try {
      doc[key] = deltas.reduce((value, delta) => applyFieldDelta(value, FieldDelta.parse(JSON.parse(delta))), JSON.parse(json as string) as unknown);
    } catch (err) {
      throw new DomainError('store_unavailable', `agent ${agent_id}: the stored deltas of field ${key} do not apply to its value: ${String(err)}`);
    }
  }
}
