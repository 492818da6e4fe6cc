import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MachineName } from '../../../machines/index.js';
import type { CoverageRecorder } from '../coverage.js';
import type { ModelPath } from '../paths.js';
import { TMPDIR_VARIABLE } from './harness.js';

const CHILD = fileURLToPath(new URL('./isolated-child.ts', import.meta.url));

interface ChildReport {
  done: boolean;
  error?: string;
  states: string[];
  transitions: string[];
}

/**
 * Runs a path in a child process and kills it after `timeoutMs`: for paths whose runtime failure
 * is a hang that starves the event loop, so no timer in this process could end the test. The
 * coverage the child reached before it stopped still counts.
 */
export async function executeIsolated(machine: MachineName, path: ModelPath, recorder: CoverageRecorder, timeoutMs = 10_000): Promise<void> {
  recorder.paths += 1;
  try {
    await runChild(machine, path, recorder, timeoutMs);
    recorder.passed += 1;
  } catch (error) {
    recorder.failed.push(path.name);
    throw error;
  }
}

async function runChild(machine: MachineName, path: ModelPath, recorder: CoverageRecorder, timeoutMs: number): Promise<void> {
  // A killed child cannot clean up: its data dirs go where this process removes them.
  const tmp = await mkdtemp(join(tmpdir(), 'holon-model-isolated-'));
  try {
    await runIn(tmp, machine, path, recorder, timeoutMs);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function runIn(tmp: string, machine: MachineName, path: ModelPath, recorder: CoverageRecorder, timeoutMs: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CHILD, machine, path.name], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, [TMPDIR_VARIABLE]: tmp },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let timedOut = false;
  const kill = (): void => {
    child.kill('SIGKILL');
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, timeoutMs);
  // Also when this worker goes first (a test-level timeout, an aborted run).
  process.once('exit', kill);
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  clearTimeout(timer);
  process.off('exit', kill);
  const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
  const last = lines.at(-1);
  const report = last ? (JSON.parse(last) as ChildReport) : null;
  if (report) {
    recorder.visit(report.states);
    recorder.take(report.transitions);
  }
  if (timedOut) {
    const where = report && report.transitions.length > 0 ? `after the runtime took ${report.transitions.join(', ')}` : 'before the first step was verified';
    throw new Error(`${machine} path "${path.name}": the runtime stopped responding ${where} (no timer fired within ${timeoutMs} ms; the process was killed)${stderr ? `\n${stderr.slice(-2000)}` : ''}`);
  }
  if (!report?.done) throw new Error(`${machine} path "${path.name}": the child ended without a result\n${stderr.slice(-2000)}`);
  if (report.error) throw new Error(report.error);
}
