import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { openRuntime, untilAsleep } from '../runtime/helpers.js';
import { activeWithoutVerifiedSnapshot, DataDirReader, fileProblems, readAgent } from './fixtures/data-dir.js';
import { TempDirs } from './fixtures/harness.js';
import { editLatestSnapshot } from './fixtures/snapshot-edit.js';

/** The crash loop is only as good as its checks: each must flag the damage it is meant to find. */

const dirs = new TempDirs();
let runtime: Runtime | undefined;

afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  await dirs.cleanup();
});

async function closedDirWithAgent(): Promise<string> {
  const dir = await dirs.make();
  runtime = await openRuntime(dir);
  await runtime.createAgent({ agent_id: 'checked' });
  await untilAsleep(runtime, 'checked');
  await runtime.close();
  runtime = undefined;
  return dir;
}

const segment = (dir: string) => join(dir, 'agents', 'checked', 'events', '00000000.jsonl');

describe('data directory checks', () => {
  it('a clean directory has no problems', async () => {
    expect(await fileProblems(await closedDirWithAgent())).toEqual([]);
  });

  it('flags a torn last line, an unparsable line, a lost acknowledged event and an uncommitted tail', async () => {
    const torn = await closedDirWithAgent();
    await appendFile(segment(torn), '{"id":"half');
    expect((await fileProblems(torn)).join('\n')).toContain('torn last line');

    const lost = await closedDirWithAgent();
    const lines = (await readFile(segment(lost), 'utf8')).split('\n').filter((l) => l !== '');
    await writeFile(segment(lost), `${lines.slice(0, -1).join('\n')}\n`);
    expect((await fileProblems(lost)).join('\n')).toContain('the log holds');

    const garbage = await closedDirWithAgent();
    await writeFile(segment(garbage), (await readFile(segment(garbage), 'utf8')).replace('"event_seq":2', '"event_seq":"two"'));
    expect(await fileProblems(garbage)).not.toEqual([]);

    const ahead = await closedDirWithAgent();
    const last = JSON.parse(lines.at(-1) ?? '{}') as { event_seq: number };
    const agent = await readAgent(ahead, 'checked');
    await appendFile(segment(ahead), `${JSON.stringify({ id: 'evt_x', event_seq: (agent?.last_event_seq ?? last.event_seq) + 1, ts: new Date(0).toISOString(), agent_id: 'checked', type: 'wake_hint', payload: {} })}\n`);
    expect(await new DataDirReader(ahead).problems({ strictTail: false })).toEqual([]);
    expect((await fileProblems(ahead)).join('\n')).toContain('past last_event_seq');
  });

  it('flags an acknowledged event count going back between two checks', async () => {
    const dir = await closedDirWithAgent();
    const reader = new DataDirReader(dir);
    expect(await reader.problems()).toEqual([]);
    const path = join(dir, 'agents', 'checked', 'doc.json');
    const file = JSON.parse(await readFile(path, 'utf8')) as { last_event_seq: number };
    file.last_event_seq -= 1;
    await writeFile(path, JSON.stringify(file));
    expect((await reader.problems()).join('\n')).toContain('went back');
  });

  it('flags an Active agent whose latest snapshot fails verification', async () => {
    const dir = await closedDirWithAgent();
    // Judged as if Active (the check only looks at Active agents).
    const asActive = async () => {
      const agent = await readAgent(dir, 'checked');
      if (!agent) throw new Error('agent missing');
      agent.doc.state.phase = 'active';
      return agent;
    };
    expect(activeWithoutVerifiedSnapshot(await asActive())).toBeNull();
    await editLatestSnapshot(dir, 'checked', (s) => (s.identity.owner = 'someone else'), { resign: false });
    expect(activeWithoutVerifiedSnapshot(await asActive())).toContain('checksum');
  });
});
