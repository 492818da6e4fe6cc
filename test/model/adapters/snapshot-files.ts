import { SNAPSHOT_SCHEMA_VERSION } from '../../../src/domain/index.js';
import { checksumOfUnsigned } from '../../durability/fixtures/snapshot-edit.js';
import type { StoredDocFile } from './harness.js';

/*
 * Edits of the latest snapshot in an agent's document file, made while the runtime is down: what
 * a torn write or another runtime version leaves on disk.
 */

function latestSnapshot(file: StoredDocFile): Record<string, unknown> & { recovery: Record<string, unknown> } {
  const snapshots = file.doc['snapshots'] as Array<Record<string, unknown> & { recovery: Record<string, unknown> }>;
  const latest = snapshots.at(-1);
  if (!latest) throw new Error('the agent has no snapshot to edit');
  return latest;
}

/** Keeps the shape but breaks the SHA-256 checksum: the wake check reports corruption. */
export function corruptLatestSnapshot(file: StoredDocFile): void {
  const latest = latestSnapshot(file);
  const checksum = String(latest.recovery['checksum']);
  latest.recovery['checksum'] = `${checksum[0] === '0' ? '1' : '0'}${checksum.slice(1)}`;
}

/**
 * Rewrites the latest snapshot as a newer runtime would have written it: schema_version one past
 * this runtime's, with a valid checksum, so the wake check refuses it as incompatible rather than
 * corrupted. (The runtime's checksum function is not exported; the durability fixtures mirror it, and a path fails
 * with WAKE.FAILED instead of WAKE.REFUSED if the two ever disagree.)
 */
export function makeLatestSnapshotNewer(file: StoredDocFile): void {
  const latest = latestSnapshot(file);
  const { checksum: _old, ...recovery } = latest.recovery;
  const unsigned = { ...latest, recovery: { ...recovery, schema_version: SNAPSHOT_SCHEMA_VERSION + 1 } };
  latest.recovery = { ...unsigned.recovery, checksum: checksumOfUnsigned(unsigned) };
}

/** An actor snapshot whose context is gone: the agent's next effect request throws inside XState. */
export function dropMachineContext(file: StoredDocFile): void {
  const machine = file.doc['machine'] as Record<string, unknown> | null;
  if (!machine) throw new Error('the agent has no machine snapshot');
  machine['context'] = null;
}
