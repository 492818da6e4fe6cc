import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../../src/domain/index.js';
import {
  startCommand,
  waitForOutput,
  type CommandHandle,
  type CommandOptions,
} from '../../../src/runtime/process/index.js';

let dir: string;
const started: CommandHandle[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'holon-cmd-'));
});

afterEach(async () => {
  // A failing assertion must not leave sleepers behind.
  await Promise.all(started.splice(0).map((handle) => handle.stop()));
  await rm(dir, { recursive: true, force: true });
});

function start(cmd: string, options: Partial<CommandOptions> = {}): CommandHandle {
  const handle = startCommand({ cmd, artifactPath: join(dir, 'out', 'artifact.log'), ...options });
  started.push(handle);
  return handle;
}

const artifactText = (): Promise<string> => readFile(join(dir, 'out', 'artifact.log'), 'utf8');

/** Living (non-zombie) members of a process group, as `ps` sees them. */
function livingMembers(pgid: number): number[] {
  const lines = execFileSync('ps', ['-eo', 'pid=,pgid=,stat='], { encoding: 'utf8' }).trim().split('\n');
  return lines
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, state]) => Number(group) === pgid && !state?.startsWith('Z'))
    .map(([pid]) => Number(pid));
}

function isLiving(pid: number): boolean {
  const lines = execFileSync('ps', ['-eo', 'pid=,stat='], { encoding: 'utf8' }).trim().split('\n');
  return lines.some((line) => {
    const [p, state] = line.trim().split(/\s+/);
    return Number(p) === pid && !state?.startsWith('Z');
  });
}

/** Waits until the command printed its first line (a pid, in these tests) and returns it. */
async function firstLine(handle: CommandHandle): Promise<string> {
  while (!handle.preview().includes('\n')) {
    const status = await waitForOutput(handle, { sinceBytes: handle.outputBytes, timeoutMs: 10_000 });
    if (status !== 'output') throw new Error(`no first line: ${status}`);
  }
  return handle.preview().split('\n')[0] ?? '';
}

describe('startCommand', () => {
  it('completes a successful command with its output in the preview and the artifact', async () => {
    const handle = start('echo hello; echo world');
    const result = await handle.result;
    expect(result).toEqual({
      outcome: 'completed',
      exit_code: 0,
      signal: null,
      reason: null,
      output_bytes: 12,
      error: null,
    });
    expect(handle.preview()).toBe('hello\nworld\n');
    expect(handle.outputBytes).toBe(12);
    expect(handle.truncated).toBe(false);
    expect(handle.ended).toBe(true);
    expect(await artifactText()).toBe('hello\nworld\n');
  });

  it('fails with the exit code of a non-zero exit', async () => {
    const result = await start('echo partial; exit 3').result;
    expect(result.outcome).toBe('failed');
    expect(result.exit_code).toBe(3);
    expect(result.reason).toBeNull();
    expect(await artifactText()).toBe('partial\n');
  });

  it('captures stderr together with stdout, in the order written', async () => {
    const handle = start('echo out; echo err 1>&2; echo more');
    const result = await handle.result;
    expect(await artifactText()).toBe('out\nerr\nmore\n');
    expect(handle.preview()).toBe('out\nerr\nmore\n');
    expect(result.output_bytes).toBe(13);
  });

  it('keeps only the tail in the preview while the artifact has everything', async () => {
    const handle = start('i=0; while [ $i -lt 100 ]; do echo line-$i; i=$((i+1)); done', { previewBytes: 20 });
    const result = await handle.result;
    const artifact = await artifactText();
    expect(artifact.split('\n')).toHaveLength(101);
    expect(result.output_bytes).toBe(Buffer.byteLength(artifact));
    expect(handle.truncated).toBe(true);
    expect(handle.preview()).toBe(artifact.slice(-20));
    expect(handle.preview(8)).toBe('line-99\n');
  });

  it('passes env on top of the inherited environment and runs in cwd', async () => {
    const handle = start('echo "$HOLON_TEST_VAR"; pwd; command -v sh >/dev/null && echo has-path', {
      env: { HOLON_TEST_VAR: 'from-env' },
      cwd: dir,
    });
    await handle.result;
    const realDir = execFileSync('realpath', [dir], { encoding: 'utf8' }).trim();
    expect(await artifactText()).toBe(`from-env\n${realDir}\nhas-path\n`);
  });

  it('gives a command without input end-of-file on stdin instead of hanging', async () => {
    const handle = start('cat; echo after-cat');
    expect((await handle.result).outcome).toBe('completed');
    expect(handle.preview()).toBe('after-cat\n');
  });

  it('fails a command killed by a signal it did not get from us, with the signal', async () => {
    const result = await start('kill -KILL $$').result;
    expect(result).toMatchObject({ outcome: 'failed', exit_code: null, signal: 'SIGKILL', reason: null });
  });

  it('times out: the whole process group is terminated and the task fails with reason timeout', async () => {
    const handle = start('sleep 30 & echo $!; sleep 30; wait', { timeoutMs: 300 });
    const grandchild = Number(await firstLine(handle));
    expect(isLiving(grandchild)).toBe(true);
    const result = await handle.result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toBe('timeout');
    expect(result.exit_code).toBeNull();
    expect(result.signal).toBe('SIGTERM');
    expect(isLiving(grandchild)).toBe(false);
    expect(livingMembers(handle.pid ?? -1)).toEqual([]);
  });

  it('stop() cancels the command and kills its grandchildren too', async () => {
    const handle = start('sleep 30 & echo $!; sleep 30; wait');
    const grandchild = Number(await firstLine(handle));
    expect(livingMembers(handle.pid ?? -1).length).toBeGreaterThanOrEqual(2);
    await handle.stop();
    expect(handle.ended).toBe(true);
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'cancelled', reason: 'stopped' });
    expect(isLiving(grandchild)).toBe(false);
    expect(livingMembers(handle.pid ?? -1)).toEqual([]);
  });

  it('SIGKILLs a group that ignores SIGTERM once the grace has passed', async () => {
    const handle = start('trap "" TERM; echo ready; sleep 30', { killGraceMs: 200 });
    await firstLine(handle);
    await handle.stop();
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'cancelled', reason: 'stopped', signal: 'SIGKILL' });
    expect(livingMembers(handle.pid ?? -1)).toEqual([]);
  });

  it('escalates to SIGKILL at once on a second stop()', async () => {
    const handle = start('trap "" TERM; echo ready; sleep 30', { killGraceMs: 600_000 });
    await firstLine(handle);
    const first = handle.stop();
    await handle.stop();
    await first;
    expect(await handle.result).toMatchObject({ outcome: 'cancelled', signal: 'SIGKILL' });
  });

  it('stop() after the end is a no-op that keeps the result', async () => {
    const handle = start('echo done');
    await handle.result;
    await handle.stop();
    await handle.stop();
    expect(await handle.result).toMatchObject({ outcome: 'completed', exit_code: 0 });
  });

  it('terminates what the shell left running in its group when it exits', async () => {
    const handle = start('sleep 30 & echo $!');
    const grandchild = Number(await firstLine(handle));
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'completed', exit_code: 0, reason: null });
    expect(isLiving(grandchild)).toBe(false);
    expect(livingMembers(handle.pid ?? -1)).toEqual([]);
  });

  it('does not wait forever for a writer that escaped the process group', async () => {
    // The escapee announces itself (outside the pipe) before the shell prints and exits, so it is
    // certainly out of the group and holding the pipe when the group ends.
    const marker = join(dir, 'escaped');
    const handle = start(`setsid sh -c 'touch ${marker}; sleep 3' & while [ ! -f ${marker} ]; do sleep 0.01; done; echo started`);
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'completed', exit_code: 0 });
    expect(result.error).toMatch(/left the process group/);
    expect(handle.preview()).toBe('started\n');
  });

  it('feeds stdin of a command started with acceptsInput', async () => {
    const handle = start('cat', { acceptsInput: true });
    expect(await handle.write('hello\n')).toBe(6);
    expect(await waitForOutput(handle, { sinceBytes: 0, timeoutMs: 10_000 })).toBe('output');
    expect(await handle.write('héllo\n')).toBe(7);
    handle.closeInput();
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'completed', exit_code: 0, output_bytes: 13 });
    expect(await artifactText()).toBe('hello\nhéllo\n');
  });

  it('rejects write() on a command that does not accept input', async () => {
    const handle = start('sleep 30');
    const rejection = handle.write('x');
    await expect(rejection).rejects.toBeInstanceOf(DomainError);
    await expect(rejection).rejects.toMatchObject({ code: 'task_not_accepting_input' });
    await expect(rejection).rejects.toThrow(/acceptsInput/);
  });

  it('rejects write() after closeInput() and after the end', async () => {
    const handle = start('cat', { acceptsInput: true });
    handle.closeInput();
    await expect(handle.write('late')).rejects.toThrow(/input is closed/);
    await handle.result;
    await expect(handle.write('later')).rejects.toMatchObject({ code: 'task_not_accepting_input' });
  });

  it('fails with spawn_failed for a working directory that does not exist', async () => {
    const missing = join(dir, 'does-not-exist');
    const handle = start('echo never', { cwd: missing });
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'failed', exit_code: null, signal: null, reason: 'spawn_failed' });
    expect(result.error).toContain(missing);
    expect(handle.pid).toBeNull();
    expect((await stat(join(dir, 'out', 'artifact.log'))).size).toBe(0);
  });

  it('fails with spawn_failed when the artifact cannot be created', async () => {
    const blocker = join(dir, 'a-file');
    await writeFile(blocker, 'not a directory');
    const handle = startCommand({ cmd: 'echo never', artifactPath: join(blocker, 'artifact.log') });
    const result = await handle.result;
    expect(result).toMatchObject({ outcome: 'failed', reason: 'spawn_failed' });
    expect(result.error).toContain('artifact');
  });

  it('notifies output listeners until they unsubscribe', async () => {
    const handle = start('echo one; sleep 0.3; echo two');
    const seen: number[] = [];
    const unsubscribe = handle.onOutput((outputBytes) => {
      seen.push(outputBytes);
      unsubscribe();
    });
    await handle.result;
    expect(seen).toEqual([4]);
    expect(handle.outputBytes).toBe(8);
  });

  it('rejects invalid numeric options', () => {
    const artifactPath = join(dir, 'x.log');
    expect(() => startCommand({ cmd: 'true', artifactPath, previewBytes: 0 })).toThrow(RangeError);
    expect(() => startCommand({ cmd: 'true', artifactPath, timeoutMs: -1 })).toThrow(RangeError);
    expect(() => startCommand({ cmd: 'true', artifactPath, killGraceMs: Number.NaN })).toThrow(RangeError);
  });
});
