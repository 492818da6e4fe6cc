import { z } from 'zod';
import { AgentEvent, AgentId } from '../../domain/index.js';
import type { Lease, StoredAgent } from '../store.js';
import { FieldDelta } from '../shared/doc-json.js';

/** Parsers for what the lowdb store keeps on disk; typed against the port so the two cannot drift. */

/** `lease.json`. */
export const LeaseRecord: z.ZodType<Lease> = z.object({
  holder: z.string().min(1),
  fencing_token: z.number().int().positive(),
  acquired_at: z.string(),
  expires_at: z.string(),
});

/** What doc.json holds: the stored agent and its roster entry (absent while no commit carried one). */
export type PersistedAgent = StoredAgent & { roster?: unknown };

/** `agents/<agent_id>/doc.json`; `last_event_seq` is the commit point of the event log. */
export const AgentDocRecord: z.ZodType<PersistedAgent> = z.object({
  version: z.number().int().positive(),
  last_event_seq: z.number().int().nonnegative(),
  doc: z.unknown(),
  roster: z.unknown().optional(),
});

/** `global.json`. */
export const GlobalRecord = z.record(z.string(), z.unknown());
export type GlobalRecord = z.infer<typeof GlobalRecord>;

/**
 * One commit in the write-ahead log: the agent's state after it (`r`: the roster entry in effect,
 * absent while none was ever given) and the events it appended. The document is either whole
 * (`d`) or, when the writer still held version `v - 1`, only the fields that changed (`p` whole,
 * `q` as deltas of their previous values), to be laid over version `v - 1` (an earlier record, or
 * doc.json, which a checkpoint round writes before it deletes the records it covers).
 */
export const WalRecord = z.object({
  a: AgentId,
  v: z.number().int().positive(),
  s: z.number().int().nonnegative(),
  d: z.unknown().optional(),
  p: z.record(z.string(), z.unknown()).optional(),
  /** With `p`: fields changed in place of their previous value, as `FieldDelta`s (see doc-json.ts). */
  q: z.record(z.string(), FieldDelta).optional(),
  r: z.unknown().optional(),
  e: z.array(AgentEvent),
});
export type WalRecord = z.infer<typeof WalRecord>;
