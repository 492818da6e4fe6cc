import { createHash } from 'node:crypto';
import { DomainError, SNAPSHOT_SCHEMA_VERSION, Snapshot, type SnapshotBody, type SnapshotKind } from '../../domain/index.js';
import { addSnapshot, type AgentDoc } from '../agent/agent-doc.js';
import type { Tx } from '../agent/tx.js';
import { newId } from '../clock.js';

/**
 * Canonical JSON (keys sorted by UTF-16 code units, undefined members left out) so the checksum
 * does not depend on key order. Built by appending, as it runs on every sleep; its output must
 * never change, or the snapshots already on disk would fail their checksums.
 */
function canonical(value: unknown): string {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonical(value[i]);
    return `${out}]`;
  }
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let out = '{';
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      out += `${out === '{' ? '' : ','}${JSON.stringify(key)}:${canonical(member)}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value ?? null);
}

function checksumOf(snapshot: Omit<Snapshot, 'recovery'> & { recovery: Omit<Snapshot['recovery'], 'checksum'> }): string {
  return createHash('sha256').update(canonical(snapshot)).digest('hex');
}

export interface SnapshotContext {
  fencingToken: number;
  holder: string | null;
  now: Date;
}

/** The seed-002 tree of an agent as it stands in `doc`. */
export function buildSnapshot(doc: AgentDoc, kind: SnapshotKind, ctx: SnapshotContext): Snapshot {
  const body: SnapshotBody = {
    identity: {
      id: doc.identity.agent_id,
      version: doc.identity.identity_version,
      owner: doc.identity.owner,
      mission: doc.identity.mission,
    },
    lifecycle: {
      state: doc.state.phase,
      state_version: doc.state.state_version,
      lease: { holder: ctx.holder, fencing_token: ctx.fencingToken },
      machine: doc.machine,
    },
    goals: {
      active: doc.work_items.filter((w) => w.state === 'open' && w.id === doc.state.current_work_item_id).map((w) => w.id),
      queued: doc.work_items.filter((w) => w.state === 'open' && w.id !== doc.state.current_work_item_id && !w.blocked_by).map((w) => w.id),
      suspended: doc.work_items.filter((w) => w.state === 'open' && w.blocked_by !== null).map((w) => w.id),
    },
    tasks: {
      cursors: Object.fromEntries(doc.tasks.map((t) => [t.id, t.output_bytes])),
      pending_effects: doc.effects.filter((e) => e.status === 'started').map((e) => e.idempotency_key),
      dedup_keys: doc.recent_keys.slice(-64),
    },
    memory: { indexes: [], working_set: doc.queue.filter((m) => m.status === 'queued').map((m) => m.id), retention: 'last_64_messages' },
    world: { entities: [], relations: [], observation_watermark: doc.next_message_seq - 1 },
    capabilities: {
      versions: { runtime: 'holon-xstate/1', runner: doc.config.turn_runner },
      permissions: doc.triggers.filter((t) => t.status === 'active').map((t) => `trigger:${t.id}:${t.delivery_mode}`),
      performance_evidence: [],
    },
    relationships: { peers: [], roles: [], trust: {}, active_protocols: [] },
  };
  const unsigned = {
    ...body,
    snapshot_id: newId('snap'),
    agent_id: doc.identity.agent_id,
    kind,
    recovery: {
      checkpoint: `transition:${doc.transition_count}`,
      schema_version: SNAPSHOT_SCHEMA_VERSION,
      created_at: ctx.now.toISOString(),
    },
  };
  return signed(unsigned);
}

export type SnapshotVerdict =
  | { ok: true; snapshot: Snapshot }
  | { ok: false; kind: 'incompatible'; reason: string; hint: string }
  | { ok: false; kind: 'corrupted'; reason: string };

/**
 * Snapshots known to be intact: signed here, or verified once. Snapshots are never edited in place
 * (see `copyDoc`), so a wake does not parse and hash the one the last sleep built again.
 */
const intact = new WeakSet<object>();

function checksumMatches(snapshot: Snapshot): boolean {
  const { checksum, ...recovery } = snapshot.recovery;
  return checksumOf({ ...snapshot, recovery }) === checksum;
}

/** Seed 002 wake checks, in order: shape, checksum, schema version, identity. */
export function verifySnapshot(raw: unknown, agentId: string, identityVersion: number): SnapshotVerdict {
  let snapshot: Snapshot;
  if (typeof raw === 'object' && raw !== null && intact.has(raw)) {
    snapshot = raw as Snapshot;
  } else {
    const parsed = Snapshot.safeParse(raw);
    if (!parsed.success) return { ok: false, kind: 'corrupted', reason: 'snapshot does not parse as the seed-002 tree' };
    snapshot = parsed.data;
    if (!checksumMatches(snapshot)) {
      return { ok: false, kind: 'corrupted', reason: `snapshot ${snapshot.snapshot_id} fails its SHA-256 checksum` };
    }
    if (typeof raw === 'object' && raw !== null) intact.add(raw);
  }
  // Only an intact snapshot can be incompatible: the checksum covers schema_version too, so an
  // edited version is corruption (→ Recovering), and a genuine other-schema snapshot gets its way out.
  if (snapshot.recovery.schema_version !== SNAPSHOT_SCHEMA_VERSION) {
    return {
      ok: false,
      kind: 'incompatible',
      reason: `snapshot schema_version ${snapshot.recovery.schema_version} is not the runtime's ${SNAPSHOT_SCHEMA_VERSION}`,
      hint:
        snapshot.recovery.schema_version < SNAPSHOT_SCHEMA_VERSION
          ? `run \`holon-xstate migrate --data-dir <dir> --agent ${agentId}\` to migrate it, then wake the agent again`
          : `roll back to a runtime that writes schema_version ${snapshot.recovery.schema_version}, or run \`holon-xstate migrate --data-dir <dir> --agent ${agentId}\` to rewrite it`,
    };
  }
  if (snapshot.agent_id !== agentId || snapshot.identity.id !== agentId) {
    return { ok: false, kind: 'corrupted', reason: `snapshot belongs to ${snapshot.identity.id}, not ${agentId}` };
  }
  if (snapshot.identity.version > identityVersion) {
    return { ok: false, kind: 'corrupted', reason: 'snapshot identity version is newer than the agent record' };
  }
  return { ok: true, snapshot };
}

/**
 * `holon-xstate migrate`: rewrites an intact snapshot of another schema version at the current one
 * with a fresh checksum. A snapshot that fails its checksum is never re-signed (that would launder
 * corrupted state into a recovery point): it returns null, and recovery builds a new one instead.
 */
export function migrateSnapshot(snapshot: Snapshot): Snapshot | null {
  if (!checksumMatches(snapshot)) return null;
  if (snapshot.recovery.schema_version === SNAPSHOT_SCHEMA_VERSION) return snapshot;
  const { checksum: _old, ...recovery } = snapshot.recovery;
  return signed({ ...snapshot, recovery: { ...recovery, schema_version: SNAPSHOT_SCHEMA_VERSION } });
}

/** Computes the checksum of a snapshot whose other fields are final. */
export function signed(snapshot: Omit<Snapshot, 'recovery'> & { recovery: Omit<Snapshot['recovery'], 'checksum'> }): Snapshot {
  const result = { ...snapshot, recovery: { ...snapshot.recovery, checksum: checksumOf(snapshot) } };
  intact.add(result);
  return result;
}

/** Who stamps a snapshot: this node, under its current fencing token. */
export interface SnapshotStamp {
  readonly nodeId: string;
  fencingToken(agentId: string): number;
}

/** Takes a snapshot of the agent as the operation has it, into its records and log. */
export function takeSnapshot(tx: Tx, kind: Snapshot['kind'], stamp: SnapshotStamp): Snapshot {
  tx.syncMachine();
  const snapshot = buildSnapshot(tx.doc, kind, { fencingToken: stamp.fencingToken(tx.cell.id), holder: stamp.nodeId, now: tx.now });
  addSnapshot(tx.doc, snapshot);
  tx.emit('snapshot_taken', { snapshot_id: snapshot.snapshot_id, kind, checksum: snapshot.recovery.checksum });
  return snapshot;
}

/**
 * `holon-xstate migrate`: rewrites the agent's intact snapshots of another schema version at the
 * current one. Corrupted snapshots are left as they are (`skipped_corrupted`): waking on them
 * goes through Recovering, which builds a fresh recovery point.
 */
export function migrateSnapshots(tx: Tx): { migrated: number; skipped_corrupted: number } {
  let migrated = 0;
  let skipped = 0;
  tx.doc.snapshots = tx.doc.snapshots.map((snapshot) => {
    const next = migrateSnapshot(snapshot);
    if (!next) skipped += 1;
    else if (next !== snapshot) migrated += 1;
    return next ?? snapshot;
  });
  tx.doc.refusal = null;
  tx.emit('snapshot_taken', { migrated, skipped_corrupted: skipped });
  return { migrated, skipped_corrupted: skipped };
}

export function findSnapshot(doc: AgentDoc, snapshotId: string): Snapshot {
  const snapshot = doc.snapshots.find((s) => s.snapshot_id === snapshotId);
  if (!snapshot) throw new DomainError('snapshot_not_found', `snapshot ${snapshotId} not found`);
  return snapshot;
}
