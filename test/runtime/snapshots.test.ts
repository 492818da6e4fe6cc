import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/domain/index.js';
import { signed, verifySnapshot } from '../../src/runtime/records/snapshots.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventually, openRuntime, tempDataDir, untilAsleep, runtimeSession } from './helpers.js';

type DocFile = { doc: { snapshots: Array<{ recovery: { schema_version: number; checksum: string }; identity: { mission: string } }> } };

async function editDoc(dir: string, agentId: string, edit: (file: DocFile) => void): Promise<void> {
  const path = join(dir, 'agents', agentId, 'doc.json');
  const file = JSON.parse(await readFile(path, 'utf8')) as DocFile;
  edit(file);
  await writeFile(path, JSON.stringify(file));
}

describe('snapshots as recovery points (seed 002)', () => {
  const session = runtimeSession();
  let runtime: Runtime | undefined;

  it('are taken at initialization, before sleep, on request and at terminate, each with a valid checksum', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'snappy' });
    await untilAsleep(runtime, 'snappy');
    await runtime.takeSnapshot('snappy');
    await runtime.terminate('snappy');
    const snapshots = await runtime.listSnapshots('snappy');
    expect(snapshots.map((s) => s.kind)).toEqual(['initial', 'pre_sleep', 'on_request', 'archive']);
    for (const snapshot of snapshots) expect(verifySnapshot(snapshot, 'snappy', 1).ok).toBe(true);
    expect((await runtime.getSnapshot('snappy', snapshots[0]?.snapshot_id as string)).kind).toBe('initial');
    await expect(runtime.getSnapshot('snappy', 'snap_missing')).rejects.toMatchObject({ code: 'snapshot_not_found' });
    // Terminated is final: every mutating call is refused.
    await expect(runtime.prompt('snappy', { text: 'x' })).rejects.toMatchObject({ code: 'agent_terminated' });
    expect((await runtime.terminate('snappy')).phase).toBe('terminated');
  });

  it('an incompatible schema_version refuses Active with a migration hint; after migrate the agent wakes', async () => {
    runtime = await session.open({ nodeId: 'a' });
    await runtime.createAgent({ agent_id: 'old' });
    await untilAsleep(runtime, 'old');
    await runtime.close();
    // A snapshot written by a runtime at another schema version: intact, correctly signed.
    await editDoc(session.dir, 'old', (file) => {
      const latest = file.doc.snapshots.at(-1) as unknown as Snapshot | undefined;
      if (!latest) return;
      const { checksum: _checksum, ...recovery } = latest.recovery;
      file.doc.snapshots[file.doc.snapshots.length - 1] = signed({ ...latest, recovery: { ...recovery, schema_version: 99 } }) as never;
    });
    runtime = await session.open({ nodeId: 'b' });
    const version = (await runtime.getSummary('old')).state_version;
    const refused = runtime.transition('old', { transition_id: 'wake-old', to: 'active', reason: 'try', expected_version: version });
    await expect(refused).rejects.toMatchObject({ code: 'snapshot_incompatible' });
    await refused.catch((error: { message: string }) => expect(error.message).toContain('holon-xstate migrate'));
    const asleep = await runtime.getSummary('old');
    expect(asleep.phase).toBe('sleeping');
    expect(asleep.lifecycle.operator_hint).toContain('holon-xstate migrate');
    // A prompt queues but cannot wake the agent either.
    await runtime.prompt('old', { text: 'still there?' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await runtime.getSummary('old')).phase).toBe('sleeping');
    expect((await runtime.migrate('old')).migrated).toBeGreaterThan(0);
    const woke = await eventually(async () => {
      const found = (await runtime?.listTransitions('old', { limit: 512 }))?.filter((t) => t.from_state === 'waking' && t.to_phase === 'active');
      return found && found.length > 0 ? found : undefined;
    });
    expect(woke[0]?.phases.map((p) => p.phase)).toContain('side_effects_applied');
  });

  it('a corrupted snapshot sends the waking agent to Recovering, never straight to Active', async () => {
    runtime = await session.open({ nodeId: 'a' });
    await runtime.createAgent({ agent_id: 'torn' });
    await untilAsleep(runtime, 'torn');
    await runtime.close();
    await editDoc(session.dir, 'torn', (file) => {
      const latest = file.doc.snapshots.at(-1);
      if (latest) latest.identity.mission = 'tampered';
    });
    runtime = await session.open({ nodeId: 'b' });
    await runtime.prompt('torn', { text: 'wake up' });
    const path = await eventually(async () => {
      const steps = (await runtime?.listTransitions('torn', { limit: 512 }))?.map((t) => `${t.from_state}>${t.to_state}`) ?? [];
      return steps.includes('recovering>active.awakeIdle') ? steps : undefined;
    });
    const waking = path.lastIndexOf('sleeping>waking');
    expect(path[waking + 1]).toBe('waking>recovering');
    expect(path[waking + 2]).toBe('recovering>active.awakeIdle');
    const recovery = (await runtime.listSnapshots('torn')).find((s) => s.kind === 'recovery');
    expect(recovery && verifySnapshot(recovery, 'torn', 1).ok).toBe(true);
  });
});

describe('terminate with a hanging side effect (seed 002 scenario 5)', () => {
  it('ends Recovering with the failed phase recorded, not Terminated', async () => {
    const dir = tempDataDir();
    // The task ignores SIGTERM and the kill grace outlasts the effect timeout: stopping it "hangs".
    const runtime = await openRuntime(dir.dir, { killGraceMs: 3_000, effectTimeoutMs: 300 });
    try {
      await runtime.createAgent({ agent_id: 'stubborn' });
      const task = await runtime.execCommand('stubborn', { summary: 'ignores TERM', cmd: 'trap "" TERM; sleep 30', accepts_input: false });
      await eventually(async () => ((await runtime.getTask('stubborn', task.id)).status === 'running' ? true : undefined));
      const summary = await runtime.terminate('stubborn');
      expect(summary.phase).toBe('recovering');
      expect(summary.phase).not.toBe('terminated');
      const failed = (await runtime.listTransitions('stubborn', { limit: 512 })).at(-1);
      expect(failed?.from_state).toBe('terminating');
      expect(failed?.to_state).toBe('recovering');
      expect(failed?.reason).toMatch(/timed out/);
      expect(failed?.phases.map((p) => p.phase)).toEqual(['transition_requested', 'guard_checked', 'transition_prepared', 'transition_committed']);
      // The records did not pretend the task was interrupted while its process was still there.
      expect((await runtime.getTask('stubborn', task.id)).status).toBe('running');
      // It stays isolated in Recovering; a retried termination (the process is gone by now) completes.
      await new Promise((r) => setTimeout(r, 300));
      expect((await runtime.getSummary('stubborn')).phase).toBe('recovering');
      await eventually(async () => ((await runtime.terminate('stubborn')).phase === 'terminated' ? true : undefined), 15_000);
      expect((await runtime.getTask('stubborn', task.id)).status).toBe('interrupted');
    } finally {
      await runtime.close();
      dir.cleanup();
    }
  });
});

describe('snapshot checksums', () => {
  // The checksums of snapshots already on disk must keep verifying: the canonical form may not change.
  it('are stable: sorted keys, undefined members left out, the same digest as when they were written', () => {
    const unsigned = {
      snapshot_id: 'snap_fixed',
      agent_id: 'a1',
      kind: 'pre_sleep',
      identity: { owner: 'op', id: 'a1', version: 1, mission: 'ünïcode "quoted"\n' },
      lifecycle: { state: 'sleeping', state_version: 7, lease: { holder: null, fencing_token: 3 }, machine: { value: { active: 'awakeIdle' }, context: { b: [1, 2.5, null, undefined], a: undefined, z: { y: true } } } },
      goals: { active: [], queued: ['wi_1', 'wi_0'], suspended: [] },
      recovery: { schema_version: 1, created_at: '2026-11-29T00:00:00.000Z', checkpoint: 'transition:7' },
    };
    expect(signed(unsigned as never).recovery.checksum).toBe('3a518b08534e3ebca85eb929a377daa95eb53a23429d5d813586a4eba93fc078');
  });
});
