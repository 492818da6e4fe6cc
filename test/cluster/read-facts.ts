import pg from 'pg';
import { z } from 'zod';
import { AgentRow, EventRow, GrantRow, type Acknowledged, type ClusterFacts } from './checker.js';

const bigint = z.coerce.number().int();

/**
 * Reads what the checker needs straight from a store's tables (schema `schema`, default
 * `holon`), bypassing the runtime and the Store port: agents rows, every event with the fence of
 * the commit that wrote it, and every agent-lease grant. Payloads are parsed; nothing else is
 * interpreted here.
 */
export async function readClusterFacts(connection: pg.ClientConfig, acknowledged: Acknowledged[], schema = 'holon'): Promise<ClusterFacts> {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    const agents = await client.query(`SELECT agent_id, version, last_event_seq FROM "${schema}".agents`);
    const events = await client.query(`SELECT agent_id, event_seq, version, fence, fencing_token, type, payload FROM "${schema}".events`);
    const grants = await client.query(`SELECT agent_id, fencing_token, at_version FROM "${schema}".lease_grants`);
    return {
      agents: agents.rows.map((r) => AgentRow.extend({ version: bigint, last_event_seq: bigint }).parse(r)),
      events: events.rows.map((r: Record<string, unknown>) =>
        EventRow.extend({ event_seq: bigint, version: bigint, fencing_token: bigint }).parse({ ...r, payload: JSON.parse(String(r['payload'])) }),
      ),
      grants: grants.rows.map((r) => GrantRow.extend({ fencing_token: bigint, at_version: bigint }).parse(r)),
      acknowledged,
    };
  } finally {
    await client.end();
  }
}
