import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentFiles, type AgentWrite } from '../../src/store/lowdb/agent-files.js';
import { DirectorySyncer } from '../../src/store/lowdb/directory-syncer.js';
import { OpenFiles } from '../../src/store/lowdb/open-files.js';
import { TempDirs } from './temp-dirs.js';

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const write = (version: number, last_event_seq: number): AgentWrite => ({ version, last_event_seq, docJson: () => `{"v":${version}}`, rosterJson: undefined });
const line = (event_seq: number) => ({ event_seq, line: JSON.stringify({ event_seq }) });

async function agentFiles(): Promise<{ files: AgentFiles; agentsDir: string; handles: OpenFiles }> {
  const agentsDir = join(await temp.make(), 'agents');
  const handles = new OpenFiles();
  return { files: new AgentFiles(agentsDir, handles, new DirectorySyncer()), agentsDir, handles };
}

describe('AgentFiles.writeState', () => {
  it("creates an agent's directories on its first write, and writes into them after", async () => {
    const { files, agentsDir, handles } = await agentFiles();
    await files.writeState('a1', write(1, 0), []);
    expect(JSON.parse(readFileSync(join(agentsDir, 'a1', 'doc.json'), 'utf8'))).toEqual({ version: 1, last_event_seq: 0, doc: { v: 1 } });
    expect(existsSync(join(agentsDir, 'a1', 'events'))).toBe(false);
    // The first events of an agent whose directory exists: only events/ is missing.
    await files.writeState('a1', write(2, 2), [line(1), line(2)]);
    await files.writeState('a1', write(3, 3), [line(3)]);
    expect(JSON.parse(readFileSync(join(agentsDir, 'a1', 'doc.json'), 'utf8')).version).toBe(3);
    const segments = readdirSync(join(agentsDir, 'a1', 'events'));
    const events = segments.flatMap((name) => readFileSync(join(agentsDir, 'a1', 'events', name), 'utf8').trim().split('\n')).map((l) => JSON.parse(l) as { event_seq: number });
    expect(events.map((e) => e.event_seq)).toEqual([1, 2, 3]);
    handles.closeAll();
  });

  it('a failure other than a missing directory is not retried as one', async () => {
    const { files, agentsDir } = await agentFiles();
    await files.writeState('a2', write(1, 0), []);
    // doc.json's temp file cannot be made where a file stands in for the agent's directory.
    writeFileSync(join(agentsDir, 'blocked'), 'not a directory');
    await expect(files.writeState('blocked', write(1, 0), [])).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(readFileSync(join(agentsDir, 'blocked'), 'utf8')).toBe('not a directory');
  });
});
