import { DomainError } from '../../domain/index.js';
import type { AgentLocation, AgentLeaseState, NodeRecord } from '../store.js';
import { assertHolder, assertTtl } from './lease-rules.js';

/**
 * The nodes registry's rules, shared by every store: what a node id and an advertised address
 * may be, and the in-memory registry of the embedded stores (one process, so its clock is the
 * store's).
 */

/** An advertised address is an absolute http(s) URL without credentials, query or fragment. */
export function assertAdvertiseUrl(url: string): void {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  const ok =
    parsed !== null &&
    (parsed.protocol === 'http:' || parsed.protocol === 'https:') &&
    parsed.username === '' &&
    parsed.password === '' &&
    parsed.search === '' &&
    parsed.hash === '' &&
    url.length <= 2_000;
  if (!ok) {
    throw new DomainError('invalid_request', 'an advertise URL must be http(s)://host[:port][/path], without credentials, query or fragment (it is not echoed: it might hold a password)');
  }
}

export function assertNode(node_id: string, advertise_url: string, ttl_ms: number): void {
  assertHolder(node_id);
  assertAdvertiseUrl(advertise_url);
  assertTtl(ttl_ms);
}

export function assertClaim(holder: string, ttl_ms: number, limit: number): void {
  assertHolder(holder);
  assertTtl(ttl_ms);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new DomainError('invalid_request', `claim limit must be a whole number 1-10000, got ${limit}`);
  }
}

/** A wake time is an ISO instant as `Date.toISOString` writes it, or `null` (none). */
export function assertWakeAt(wake_at: string | null): void {
  if (wake_at !== null && !(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(wake_at) && Number.isFinite(Date.parse(wake_at)))) {
    throw new DomainError('invalid_request', `wake_at must be an ISO time like 2030-01-01T00:00:00.000Z, got ${JSON.stringify(String(wake_at).slice(0, 40))}`);
  }
}

/** The agent's location: its live lease and the address of the node holding it (if live). */
export function locationOf(lease: AgentLeaseState | null, nodes: readonly NodeRecord[]): AgentLocation | null {
  if (lease === null || !lease.live) return null;
  const node = nodes.find((n) => n.node_id === lease.holder);
  return { agent_id: lease.agent_id, holder: lease.holder, fencing_token: lease.fencing_token, expires_at: lease.expires_at, advertise_url: node?.advertise_url ?? null };
}

/** The embedded stores' registry: in memory, on this process's clock. */
export class MemoryNodeRegistry {
  private readonly nodes = new Map<string, NodeRecord>();

  heartbeat(node_id: string, advertise_url: string, ttl_ms: number, now = Date.now()): NodeRecord {
    assertNode(node_id, advertise_url, ttl_ms);
    const previous = this.nodes.get(node_id);
    const at = new Date(now).toISOString();
    const record: NodeRecord = {
      node_id,
      advertise_url,
      started_at: previous === undefined || Date.parse(previous.expires_at) <= now ? at : previous.started_at,
      heartbeat_at: at,
      expires_at: new Date(now + Math.ceil(ttl_ms)).toISOString(),
    };
    this.nodes.set(node_id, record);
    return { ...record };
  }

  remove(node_id: string): void {
    assertHolder(node_id);
    this.nodes.delete(node_id);
  }

  live(now = Date.now()): NodeRecord[] {
    return [...this.nodes.values()]
      .filter((n) => Date.parse(n.expires_at) > now)
      .sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0))
      .map((n) => ({ ...n }));
  }
}
