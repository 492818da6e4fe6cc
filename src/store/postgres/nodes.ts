import { assertHolder } from '../shared/lease-rules.js';
import { assertNode } from '../shared/node-rules.js';
import type { NodeRecord } from '../store.js';
import { iso } from './leases.js';
import type { Row, SqlClient } from './sql-client.js';

const NODE_COLUMNS = `node_id, advertise_url, ${iso('started_at')} AS started_at, ${iso('heartbeat_at')} AS heartbeat_at, ${iso('expires_at')} AS expires_at`;

function nodeRecord(row: Row): NodeRecord {
  return {
    node_id: String(row['node_id']),
    advertise_url: String(row['advertise_url']),
    started_at: String(row['started_at']),
    heartbeat_at: String(row['heartbeat_at']),
    expires_at: String(row['expires_at']),
  };
}

/**
 * The nodes registry (`nodes`, one row per node id): every heartbeat is one upsert on the
 * database's clock, so nodes with skewed clocks agree on who is live.
 */
export class NodeTable {
  constructor(
    private readonly sql: SqlClient,
    private readonly s: string,
  ) {}

  async heartbeat(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord> {
    assertNode(node_id, advertise_url, ttl_ms);
    const [row] = await this.sql.query(
      `WITH now AS (SELECT date_trunc('milliseconds', statement_timestamp()) AS t)
       INSERT INTO ${this.s}.nodes AS n (node_id, advertise_url, started_at, heartbeat_at, expires_at)
       SELECT $1, $2, now.t, now.t, now.t + $3 * interval '1 millisecond' FROM now
       ON CONFLICT (node_id) DO UPDATE SET
         advertise_url = EXCLUDED.advertise_url,
         started_at = CASE WHEN n.expires_at <= EXCLUDED.heartbeat_at THEN EXCLUDED.started_at ELSE n.started_at END,
         heartbeat_at = EXCLUDED.heartbeat_at,
         expires_at = EXCLUDED.expires_at
       RETURNING ${NODE_COLUMNS}`,
      [node_id, advertise_url, Math.ceil(ttl_ms)],
    );
    return nodeRecord(row as Row);
  }

  async remove(node_id: string): Promise<void> {
    assertHolder(node_id);
    await this.sql.query(`DELETE FROM ${this.s}.nodes WHERE node_id = $1`, [node_id]);
  }

  async live(): Promise<NodeRecord[]> {
    const rows = await this.sql.query(`SELECT ${NODE_COLUMNS} FROM ${this.s}.nodes WHERE expires_at > statement_timestamp() ORDER BY node_id`);
    return rows.map(nodeRecord);
  }
}
