import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCommand, waitForOutput, type CommandHandle } from '../../../src/runtime/process/index.js';

let dir: string;
const started: CommandHandle[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'holon-wait-'));
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((handle) => handle.stop()));
  await rm(dir, { recursive: true, force: true });
});

function start(cmd: string): CommandHandle {
  const handle = startCommand({ cmd, artifactPath: join(dir, 'artifact.log') });
  started.push(handle);
  return handle;
}

describe('waitForOutput', () => {
  it('resolves output when the command prints after a delay', async () => {
    const handle = start('sleep 0.3; echo late; sleep 30');
    expect(handle.outputBytes).toBe(0);
    const status = await waitForOutput(handle, { sinceBytes: 0, timeoutMs: 20_000 });
    expect(status).toBe('output');
    expect(handle.preview()).toBe('late\n');
    expect(handle.ended).toBe(false);
  });

  it('resolves timeout when the command prints nothing', async () => {
    const handle = start('sleep 30');
    expect(await waitForOutput(handle, { sinceBytes: 0, timeoutMs: 150 })).toBe('timeout');
    expect(handle.ended).toBe(false);
  });

  it('resolves ended when the command finishes without new output', async () => {
    const handle = start('echo once; sleep 0.2');
    expect(await waitForOutput(handle, { sinceBytes: 0, timeoutMs: 20_000 })).toBe('output');
    const status = await waitForOutput(handle, { sinceBytes: handle.outputBytes, timeoutMs: 20_000 });
    expect(status).toBe('ended');
    expect(handle.ended).toBe(true);
  });

  it('answers at once for output beyond sinceBytes, and for an ended command', async () => {
    const handle = start('echo abc');
    await handle.result;
    expect(await waitForOutput(handle, { sinceBytes: 2, timeoutMs: 0 })).toBe('output');
    expect(await waitForOutput(handle, { sinceBytes: 4, timeoutMs: 60_000 })).toBe('ended');
  });

  it('ignores output that does not go beyond sinceBytes', async () => {
    const handle = start('printf ab; sleep 0.2; printf cd; sleep 30');
    expect(await waitForOutput(handle, { sinceBytes: 0, timeoutMs: 20_000 })).toBe('output');
    const seen = handle.outputBytes;
    expect(seen).toBe(2);
    expect(await waitForOutput(handle, { sinceBytes: 3, timeoutMs: 20_000 })).toBe('output');
    expect(handle.outputBytes).toBe(4);
  });
});
