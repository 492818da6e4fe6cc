import { execFile, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { Snapshot } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { signed } from '../../src/runtime/records/snapshots.js';
import { removeTempDirs, tempDir, waitFor } from './helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

describe('holon-xstate migrate and serve --inspect-log', () => {
  afterAll(removeTempDirs);

  it('migrate rewrites an incompatible snapshot so the agent can wake again', async () => {
    const dataDir = await tempDir('holon-migrate-');
    const runtime = await Runtime.open({ dataDir, nodeId: 'before' });
    await runtime.createAgent({ agent_id: 'legacy' });
    await waitFor(async () => ((await runtime.getSummary('legacy')).agent.status === 'asleep' ? true : undefined), 10_000);
    await runtime.close();
    const path = join(dataDir, 'agents', 'legacy', 'doc.json');
    const file = JSON.parse(await readFile(path, 'utf8')) as { doc: { snapshots: Snapshot[] } };
    const latest = file.doc.snapshots.at(-1) as Snapshot;
    const { checksum: _c, ...recovery } = latest.recovery;
    file.doc.snapshots[file.doc.snapshots.length - 1] = signed({ ...latest, recovery: { ...recovery, schema_version: 7 } });
    await writeFile(path, JSON.stringify(file));

    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'migrate', '--data-dir', dataDir, '--agent', 'legacy'], { cwd: ROOT });
    expect(stdout).toContain('legacy: 1 snapshot(s) migrated, 0 corrupted left for recovery');

    const after = await Runtime.open({ dataDir, nodeId: 'after' });
    try {
      const version = (await after.getSummary('legacy')).state_version;
      const woke = await after.transition('legacy', { transition_id: 'wake-after-migrate', to: 'active', reason: 'migrated', expected_version: version });
      expect(woke.record.to_phase).toBe('waking');
      const closing = (await after.listTransitions('legacy', { limit: 512 })).find((t) => t.evidence_refs.includes('transition:wake-after-migrate'));
      expect(closing?.to_phase).toBe('active');
    } finally {
      await after.close();
    }
  }, 60_000);

  it('serve --inspect-log records XState inspection events as JSONL', async () => {
    const dataDir = await tempDir('holon-inspect-');
    const log = join(dataDir, 'inspect.jsonl');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--log-level', 'warn', '--data-dir', join(dataDir, 'data'), '--inspect-log', log], {
      cwd: ROOT,
      env: { ...process.env, HOLON_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    try {
      const base = await waitFor(async () => /listening on (http:\/\/[^\s]+)/.exec(text)?.[1], 90_000);
      const created = await fetch(`${base}/api/control/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: 'seen' }) });
      expect(created.status).toBe(201);
      const lines = await waitFor(async () => {
        const content = await readFile(log, 'utf8').catch(() => '');
        const records = content.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { type: string; actor: string; event?: { type: string } });
        return records.some((r) => r.type === '@xstate.event' && r.event?.type === 'INITIALIZE.DONE') ? records : undefined;
      }, 10_000);
      expect(lines.some((r) => r.type === '@xstate.actor' && r.actor === 'seen')).toBe(true);
      expect(text).toContain(`inspection log: ${log}`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 120_000);
});
