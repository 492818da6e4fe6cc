import { DomainError } from '../../domain/index.js';
import { assertAgentId } from '../shared/commit-rules.js';
import { assertClaim, assertWakeAt } from '../shared/node-rules.js';
import { assertHolder, assertTtl, decideAcquire, decideRelease, decideRenew } from '../shared/lease-rules.js';
import type { AgentLease, AgentLeaseState, AgentLocation, HeldAgentLease, Lease, RenewedAgentLeases } from '../store.js';
import type { Row, SqlClient } from './sql-client.js';

/** A timestamptz as the ISO string the port uses (milliseconds, UTC). */
export const iso = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const AGENT_LEASE_COLUMNS = `agent_id, holder, fencing_token, ${iso('acquired_at')} AS acquired_at, ${iso('expires_at')} AS expires_at`;

function agentLease(row: Row): AgentLease {
  return {
    agent_id: String(row['agent_id']),
    holder: String(row['holder']),
    fencing_token: Number(row['fencing_token']),
    acquired_at: String(row['acquired_at']),
    expires_at: String(row['expires_at']),
  };
}

function storeLease(row: Row | undefined): Lease | null {
  if (row === undefined) return null;
  return {
    holder: String(row['holder']),
    fencing_token: Number(row['fencing_token']),
    acquired_at: String(row['acquired_at']),
    expires_at: String(row['expires_at']),
  };
}

/**
 * The store-wide lease (`store_lease`, one row): the same rules as every store
 * (`shared/lease-rules.ts`) on the caller's clock, decided in a transaction under an advisory
 * lock so that two nodes cannot both take one token.
 */
export class StoreLeaseTable {
  constructor(
    private readonly sql: SqlClient,
    private readonly s: string,
    private readonly schema: string,
  ) {}

  async read(): Promise<Lease | null> {
    const [row] = await this.sql.query(`SELECT holder, fencing_token, acquired_at, expires_at FROM ${this.s}.store_lease`);
    return storeLease(row);
  }

  acquire(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    return this.decide((current) => decideAcquire(current, holder, ttl_ms, now)) as Promise<Lease>;
  }

  renew(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    return this.decide((current) => decideRenew(current, lease, ttl_ms, now)) as Promise<Lease>;
  }

  async release(lease: Lease): Promise<void> {
    await this.decide((current) => decideRelease(current, lease));
  }

  /** Reads the row, lets `rule` decide, writes what it returns (`null`: nothing). */
  private decide(rule: (current: Lease | null) => Lease | null): Promise<Lease | null> {
    return this.sql.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`holon-xstate store lease ${this.schema}`]);
      const [row] = await tx.query(`SELECT holder, fencing_token, acquired_at, expires_at FROM ${this.s}.store_lease FOR UPDATE`);
      const next = rule(storeLease(row));
      if (next !== null) {
        await tx.query(
          `INSERT INTO ${this.s}.store_lease (holder, fencing_token, acquired_at, expires_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (singleton) DO UPDATE SET holder = EXCLUDED.holder, fencing_token = EXCLUDED.fencing_token,
             acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at`,
          [next.holder, next.fencing_token, next.acquired_at, next.expires_at],
        );
      }
      return next === null ? null : { ...next };
    });
  }
}

/**
 * Agent leases (`agent_leases`, one row per agent ever leased): every decision is one statement
 * on the database's clock (`statement_timestamp()`, to the millisecond), so nodes with skewed
 * clocks agree on expiry. A row outlives its release (expired at the epoch), so the next token
 * is always higher.
 */
export class AgentLeaseTable {
  constructor(
    private readonly sql: SqlClient,
    private readonly s: string,
  ) {}

  async acquire(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease> {
    assertAgentId(agent_id);
    assertHolder(holder);
    assertTtl(ttl_ms);
    const [row] = await this.sql.query(
      `WITH now AS (SELECT date_trunc('milliseconds', statement_timestamp()) AS t)
       INSERT INTO ${this.s}.agent_leases AS l (agent_id, holder, fencing_token, acquired_at, expires_at)
       SELECT $1, $2, 1, now.t, now.t + $3 * interval '1 millisecond' FROM now
       ON CONFLICT (agent_id) DO UPDATE SET
         holder = EXCLUDED.holder,
         fencing_token = CASE WHEN l.holder = EXCLUDED.holder THEN l.fencing_token ELSE l.fencing_token + 1 END,
         acquired_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
         expires_at = EXCLUDED.expires_at
       WHERE l.holder = EXCLUDED.holder OR l.expires_at <= EXCLUDED.acquired_at
       RETURNING ${AGENT_LEASE_COLUMNS}`,
      [agent_id, holder, Math.ceil(ttl_ms)],
    );
    if (row !== undefined) return agentLease(row);
    const current = await this.read(agent_id);
    throw new DomainError(
      'lease_lost',
      current === null
        ? `agent ${agent_id}'s lease changed while acquiring it; try again`
        : `agent ${agent_id} is leased to ${current.holder} until ${current.expires_at}`,
      current === null ? {} : { holder: current.holder, expires_at: current.expires_at, fencing_token: current.fencing_token },
    );
  }

  async renew(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases> {
    assertHolder(holder);
    assertTtl(ttl_ms);
    for (const lease of leases) assertAgentId(lease.agent_id);
    if (leases.length === 0) return { renewed: [], lost: [] };
    // Locked in id order, as a commit batch locks them.
    const rows = await this.sql.query(
      `WITH now AS (SELECT date_trunc('milliseconds', statement_timestamp()) AS t),
       held AS (
         SELECT l.agent_id FROM ${this.s}.agent_leases l
         JOIN ROWS FROM (string_to_table($2, E'\\n'), unnest($3::bigint[])) AS r(agent_id, token)
           ON l.agent_id = r.agent_id AND l.fencing_token = r.token
         WHERE l.holder = $1
         ORDER BY l.agent_id FOR UPDATE OF l)
       UPDATE ${this.s}.agent_leases l SET expires_at = now.t + $4 * interval '1 millisecond'
       FROM held, now WHERE l.agent_id = held.agent_id
       RETURNING ${AGENT_LEASE_COLUMNS.replaceAll('agent_id,', 'l.agent_id,')}`,
      [holder, leases.map((l) => l.agent_id).join('\n'), leases.map((l) => l.fencing_token), Math.ceil(ttl_ms)],
    );
    const renewed = rows.map(agentLease);
    const still = new Set(renewed.map((l) => l.agent_id));
    return { renewed, lost: leases.map((l) => l.agent_id).filter((id) => !still.has(id)) };
  }

  async release(lease: AgentLease, wake_at: string | null): Promise<void> {
    assertAgentId(lease.agent_id);
    assertWakeAt(wake_at);
    await this.sql.query(
      `UPDATE ${this.s}.agent_leases SET expires_at = 'epoch', wake_at = $4 WHERE agent_id = $1 AND holder = $2 AND fencing_token = $3`,
      [lease.agent_id, lease.holder, lease.fencing_token, wake_at],
    );
  }

  /**
   * Released agents whose wake time has come and unreleased leases that expired, earliest first,
   * each picked by one index; `SKIP LOCKED` keeps concurrent claimers (and renewals) apart, and
   * the row lock's recheck drops a row another holder took meanwhile.
   */
  async claimDue(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]> {
    assertClaim(holder, ttl_ms, limit);
    const rows = await this.sql.query(
      `WITH now AS (SELECT date_trunc('milliseconds', statement_timestamp()) AS t),
       woken AS (
         SELECT l.agent_id, l.wake_at AS due FROM ${this.s}.agent_leases l, now
         WHERE l.expires_at = 'epoch' AND l.wake_at IS NOT NULL AND l.wake_at <= now.t
         ORDER BY l.wake_at LIMIT $2 FOR UPDATE OF l SKIP LOCKED),
       orphaned AS (
         SELECT l.agent_id, l.expires_at AS due FROM ${this.s}.agent_leases l, now
         WHERE l.expires_at > 'epoch' AND l.expires_at <= now.t
         ORDER BY l.expires_at LIMIT $2 FOR UPDATE OF l SKIP LOCKED),
       due AS (SELECT * FROM woken UNION ALL SELECT * FROM orphaned ORDER BY due, agent_id LIMIT $2)
       UPDATE ${this.s}.agent_leases l SET
         holder = $1,
         fencing_token = CASE WHEN l.holder = $1 THEN l.fencing_token ELSE l.fencing_token + 1 END,
         acquired_at = CASE WHEN l.holder = $1 THEN l.acquired_at ELSE now.t END,
         expires_at = now.t + $3 * interval '1 millisecond',
         wake_at = NULL
       FROM due, now WHERE l.agent_id = due.agent_id
       RETURNING ${AGENT_LEASE_COLUMNS.replaceAll('agent_id,', 'l.agent_id,')}, due.due`,
      [holder, limit, Math.ceil(ttl_ms)],
    );
    return rows.sort((a, b) => (a['due'] as Date).getTime() - (b['due'] as Date).getTime() || String(a['agent_id']).localeCompare(String(b['agent_id']))).map(agentLease);
  }

  /** Who holds the agent's live lease and the holder's address if it is a live node, in one statement (`null`: no live lease). */
  async locate(agent_id: string): Promise<AgentLocation | null> {
    assertAgentId(agent_id);
    const [row] = await this.sql.query(
      `SELECT l.agent_id, l.holder, l.fencing_token, ${iso('l.expires_at')} AS expires_at, n.advertise_url
       FROM ${this.s}.agent_leases l
       LEFT JOIN ${this.s}.nodes n ON n.node_id = l.holder AND n.expires_at > statement_timestamp()
       WHERE l.agent_id = $1 AND l.expires_at > statement_timestamp()`,
      [agent_id],
    );
    if (row === undefined) return null;
    const url = row['advertise_url'];
    return { agent_id: String(row['agent_id']), holder: String(row['holder']), fencing_token: Number(row['fencing_token']), expires_at: String(row['expires_at']), advertise_url: url === null || url === undefined ? null : String(url) };
  }

  async read(agent_id: string): Promise<AgentLeaseState | null> {
    assertAgentId(agent_id);
    const [row] = await this.sql.query(
      `SELECT ${AGENT_LEASE_COLUMNS}, expires_at > statement_timestamp() AS live FROM ${this.s}.agent_leases WHERE agent_id = $1`,
      [agent_id],
    );
    return row === undefined ? null : { ...agentLease(row), live: row['live'] === true };
  }
}
