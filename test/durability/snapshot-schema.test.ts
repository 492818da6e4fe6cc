import { afterEach, describe, expect, it } from 'vitest';
import { DomainError, SNAPSHOT_SCHEMA_VERSION, type AgentEvent, type Snapshot } from '../../src/domain/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { verifySnapshot } from '../../src/runtime/records/snapshots.js';
import { allEvents, openRuntime, untilAsleep } from '../runtime/helpers.js';
import { readAgent } from './fixtures/data-dir.js';
import { eventually, TempDirs } from './fixtures/harness.js';
import { editLatestSnapshot } from './fixtures/snapshot-edit.js';

/**
 * Seed 002 acceptance 4: an incompatible snapshot schema refuses Active with a migration or
 * rollback path; after `migrate`, Active. `verifySnapshot` documents its order as shape, checksum,
 * schema version, identity: a snapshot another runtime wrote at another schema carries a checksum
 * valid for its bytes ("incompatible": refused with the way out), while any edit after signing,
 * schema_version included, is "corrupted" (Recovering). `migrate` must not turn a snapshot that
 * fails its own checksum into a verified one.
 */

const dirs = new TempDirs();
let runtime: Runtime | undefined;

afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  await dirs.cleanup();
});

function transitions(events: AgentEvent[]): Array<{ from: unknown; to: unknown; reason: unknown; evidence: unknown }> {
  return events
    .filter((e) => e.type === 'transition_committed')
    .map((e) => ({ from: e.payload['from_phase'], to: e.payload['to_phase'], reason: e.payload['reason'], evidence: e.payload['evidence_refs'] }));
}

/** A sleeping agent on a closed data directory, ready for its snapshot to be edited. */
async function sleepingAgentOnDisk(agentId: string): Promise<string> {
  const dir = await dirs.make();
  const first = await openRuntime(dir);
  await first.createAgent({ agent_id: agentId });
  await untilAsleep(first, agentId);
  await first.close();
  return dir;
}

describe('scenario 4: snapshot schema compatibility on wake', () => {
  it('a snapshot written at a newer schema (valid checksum) refuses Active with the migrate / roll-back hint; after migrate, Active', async () => {
    const dir = await sleepingAgentOnDisk('schema');
    await editLatestSnapshot(dir, 'schema', (s) => (s.recovery.schema_version = SNAPSHOT_SCHEMA_VERSION + 1), { resign: true });
    runtime = await openRuntime(dir);
    const rt = runtime;
    const baseline = (await allEvents(rt, 'schema')).length;
    await rt.wake('schema', { reason: 'work arrived' });

    const refused = await eventually(async () =>
      transitions((await allEvents(rt, 'schema')).slice(baseline)).find((t) => t.from === 'waking' && t.to === 'sleeping'),
    );
    expect(String(refused.reason)).toContain('schema_version');
    const summary = await rt.getSummary('schema');
    expect(summary.phase).toBe('sleeping');
    expect(summary.lifecycle.operator_hint).toContain('holon-xstate migrate');
    expect(summary.lifecycle.operator_hint).toContain('roll back');
    const afterRefusal = (await allEvents(rt, 'schema')).slice(baseline);
    expect(transitions(afterRefusal).filter((t) => t.to === 'active')).toEqual([]);
    expect(afterRefusal.filter((e) => e.type === 'turn_started')).toEqual([]);

    const migrated = await rt.migrate('schema');
    expect(migrated.migrated).toBeGreaterThan(0);
    const woke = await eventually(async () =>
      transitions((await allEvents(rt, 'schema')).slice(baseline)).find((t) => t.from === 'waking' && t.to === 'active'),
    );
    expect(JSON.stringify(woke.evidence)).toContain('snapshot:');
    await eventually(async () => (await allEvents(rt, 'schema')).slice(baseline).some((e) => e.type === 'turn_started') || undefined);
    await untilAsleep(rt, 'schema');
    const raw = await readAgent(dir, 'schema');
    for (const snapshot of raw?.doc.snapshots ?? []) expect(verifySnapshot(snapshot, 'schema', 1).ok).toBe(true);
    expect((await rt.getSummary('schema')).lifecycle.operator_hint ?? '').not.toContain('migrate');
  });

  it('an explicit transition to active on that snapshot fails with snapshot_incompatible naming the migration', async () => {
    const dir = await sleepingAgentOnDisk('explicit');
    await editLatestSnapshot(dir, 'explicit', (s) => (s.recovery.schema_version = SNAPSHOT_SCHEMA_VERSION + 1), { resign: true });
    runtime = await openRuntime(dir);
    const version = (await runtime.getSummary('explicit')).state_version;
    const attempt = runtime.transition('explicit', { transition_id: 'wake-explicit-1', to: 'active', reason: 'operator wants it back', expected_version: version });
    await expect(attempt).rejects.toBeInstanceOf(DomainError);
    await expect(attempt).rejects.toMatchObject({ code: 'snapshot_incompatible' });
    await expect(attempt).rejects.toThrow(/holon-xstate migrate/);
    expect((await runtime.getSummary('explicit')).phase).toBe('sleeping');
  });

  // The brief's literal edit (schema_version changed, checksum not recomputed) and a content edit:
  // both fail the checksum, which verifySnapshot checks before the schema version.
  const tampering: Array<[string, (s: Snapshot) => void]> = [
    ['schema_version edited after signing', (s) => (s.recovery.schema_version = SNAPSHOT_SCHEMA_VERSION + 1)],
    ['mission edited after signing', (s) => (s.identity.mission = 'changed on disk after signing')],
  ];
  it.each(tampering)('%s: corrupted, so the wake goes to Recovering (no migrate hint), then Active on a fresh verified snapshot, never on it', async (_, edit) => {
    const dir = await sleepingAgentOnDisk('tampered');
    const tampered = await editLatestSnapshot(dir, 'tampered', edit, { resign: false });
    runtime = await openRuntime(dir);
    const rt = runtime;
    const baseline = (await allEvents(rt, 'tampered')).length;
    await rt.wake('tampered', { reason: 'work arrived' });
    const failed = await eventually(async () =>
      transitions((await allEvents(rt, 'tampered')).slice(baseline)).find((t) => t.from === 'waking' && t.to !== 'waking'),
    );
    expect(failed.to).toBe('recovering');
    expect(String(failed.reason)).toContain('checksum');
    expect((await rt.getSummary('tampered')).lifecycle.operator_hint ?? '').not.toContain('migrate');
    // Recovery ends on a fresh verified recovery point, not on the tampered snapshot.
    await eventually(async () => transitions((await allEvents(rt, 'tampered')).slice(baseline)).some((t) => t.from === 'recovering' && t.to === 'active') || undefined);
    const latest = (await readAgent(dir, 'tampered'))?.doc.snapshots.at(-1);
    expect(latest?.snapshot_id).not.toBe(tampered.snapshot_id);
    expect(latest && verifySnapshot(latest, 'tampered', 1).ok).toBe(true);
  });

  it('migrate does not re-sign a snapshot that fails its checksum (no laundering of corrupted state)', async () => {
    const dir = await sleepingAgentOnDisk('launder');
    const corrupted = await editLatestSnapshot(
      dir,
      'launder',
      (s) => {
        s.recovery.schema_version = SNAPSHOT_SCHEMA_VERSION + 1;
        s.identity.mission = 'changed on disk after signing';
      },
      { resign: false },
    );
    runtime = await openRuntime(dir);
    await runtime.migrate('launder').catch(() => undefined);
    const after = (await runtime.listSnapshots('launder')).find((s) => s.snapshot_id === corrupted.snapshot_id);
    // Either migrate dropped it, or the snapshot still fails verification.
    if (after) expect(verifySnapshot(after, 'launder', 1).ok).toBe(false);
    // And a wake never becomes Active on it.
    const rt = runtime;
    await rt.wake('launder', { reason: 'work arrived' });
    await eventually(async () => (await allEvents(rt, 'launder')).some((e) => e.type === 'transition_committed' && e.payload['to_phase'] === 'active' && e.payload['from_phase'] !== 'initializing') || undefined);
    const latest = (await readAgent(dir, 'launder'))?.doc.snapshots.at(-1);
    expect(latest?.snapshot_id).not.toBe(corrupted.snapshot_id);
  });
});
