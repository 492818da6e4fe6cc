import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { MachineName } from '../../../machines/index.js';
import type { CoverageRecorder } from '../coverage.js';
import type { ModelPath } from '../paths.js';

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
export async function executeIsolated(machine: MachineName, path: ModelPath, recorder: CoverageRecorder, timeoutMs = 15_000): Promise<void> {
  recorder.paths += 1;
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CHILD, machine, path.name], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  clearTimeout(timer);
  const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
  const last = lines.at(-1);
  const report = last ? (JSON.parse(last) as ChildReport) : null;
  if (report) {
    recorder.visit(report.states);
    recorder.take(report.transitions);
  }
  if (timedOut) {
    throw new Error(`${machine} path "${path.name}": the runtime stopped responding (no progress within ${timeoutMs} ms; the process was killed)${stderr ? `\n${stderr.slice(-2000)}` : ''}`);
  }
  if (!report?.done) throw new Error(`${machine} path "${path.name}": the child ended without a result\n${stderr.slice(-2000)}`);
  if (report.error) throw new Error(report.error);
  recorder.passed += 1;
}
