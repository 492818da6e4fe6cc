import { z } from 'zod';

/** Bumped when the snapshot tree changes shape; waking refuses other versions until migrated. */
export const SNAPSHOT_SCHEMA_VERSION = 1;

/** The seed-002 snapshot tree. `recovery.checksum` is SHA-256 over the canonical JSON of everything else. */
export const SnapshotBody = z.object({
  identity: z.object({
    id: z.string(),
    version: z.number().int().positive(),
    owner: z.string(),
    mission: z.string(),
  }),
  lifecycle: z.object({
    state: z.string(),
    state_version: z.number().int().nonnegative(),
    lease: z.object({ holder: z.string().nullable(), fencing_token: z.number().int().nonnegative() }),
    /** XState's persisted snapshot of the agent actor, restored on wake. */
    machine: z.unknown(),
  }),
  goals: z.object({
    active: z.array(z.string()),
    queued: z.array(z.string()),
    suspended: z.array(z.string()),
  }),
  tasks: z.object({
    cursors: z.record(z.string(), z.number()),
    pending_effects: z.array(z.string()),
    dedup_keys: z.array(z.string()),
  }),
  memory: z.object({
    indexes: z.array(z.string()),
    working_set: z.array(z.string()),
    retention: z.string(),
  }),
  world: z.object({
    entities: z.array(z.string()),
    relations: z.array(z.string()),
    observation_watermark: z.number().int().nonnegative(),
  }),
  capabilities: z.object({
    versions: z.record(z.string(), z.string()),
    permissions: z.array(z.string()),
    performance_evidence: z.array(z.string()),
  }),
  relationships: z.object({
    peers: z.array(z.string()),
    roles: z.array(z.string()),
    trust: z.record(z.string(), z.string()),
    active_protocols: z.array(z.string()),
  }),
});
export type SnapshotBody = z.infer<typeof SnapshotBody>;

export const SnapshotKind = z.enum(['initial', 'pre_sleep', 'on_request', 'recovery', 'archive']);
export type SnapshotKind = z.infer<typeof SnapshotKind>;

export const Snapshot = SnapshotBody.extend({
  snapshot_id: z.string(),
  agent_id: z.string(),
  kind: SnapshotKind,
  recovery: z.object({
    checkpoint: z.string(),
    schema_version: z.number().int().positive(),
    created_at: z.string(),
    checksum: z.string().regex(/^[0-9a-f]{64}$/),
  }),
});
export type Snapshot = z.infer<typeof Snapshot>;
