import { readdirSync, readFileSync } from 'node:fs';

/** One process's CPU so far (utime + stime, and stime alone, in clock ticks), its context switches, and what it is. */
interface ProcSample {
  ticks: number;
  sysTicks: number;
  switches: number;
  label: string;
}

/** Voluntary + involuntary context switches of a process so far (`/proc/<pid>/status`), 0 when gone. */
function switchesOf(pid: string): number {
  const status = read(`/proc/${pid}/status`) ?? '';
  let sum = 0;
  for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) sum += Number(match[1]);
  return sum;
}

/** Clock ticks per second (`getconf CLK_TCK`: 100 on Linux). */
const TICKS_PER_SECOND = 100;

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** What a process is, for the table: a serve node by its id, a postgres backend by its title, a load generator, or null (not ours). */
function labelOf(cmdline: string): string | null {
  const args = cmdline.split('\0').filter((a) => a !== '');
  const nodeAt = args.indexOf('--node-id');
  if (args.includes('serve') && nodeAt >= 0) return `serve ${args[nodeAt + 1] ?? '?'}`;
  if (args.some((a) => a.endsWith('load-worker.ts'))) return 'load generator';
  const title = args.join(' ');
  if (title.startsWith('postgres: ')) {
    // "postgres: postgres bench_three [local] idle" → by database; the server's own processes by name.
    const words = title.slice('postgres: '.length).split(' ');
    if (words.length >= 3 && words[2]?.startsWith('[')) return `postgres backend ${words[1]}`;
    return `postgres ${words.slice(0, 2).join(' ')}`;
  }
  if (/(^|\/)postgres$/.test(args[0] ?? '')) return 'postgres postmaster';
  return null;
}

/** Every process of interest now whose parent is one of `parents` (this process, the postmaster): pid → ticks and label. */
export function sampleCpu(parents: readonly number[]): Map<number, ProcSample> {
  const out = new Map<number, ProcSample>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = read(`/proc/${entry}/cmdline`);
    if (cmdline === null) continue;
    const label = labelOf(cmdline);
    if (label === null) continue;
    const stat = read(`/proc/${entry}/stat`);
    if (stat === null) continue;
    // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry);
    if (!parents.includes(Number(fields[1])) && !parents.includes(pid)) continue;
    const ticks = Number(fields[11]) + Number(fields[12]);
    out.set(pid, { ticks, sysTicks: Number(fields[12]), switches: switchesOf(entry), label });
  }
  return out;
}

/** One process's CPU so far (utime + stime, seconds), from `/proc/<pid>/stat`; throws if it is gone. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** The CPU of one label's processes over a span: seconds, of them in the kernel, and context switches. */
export interface CpuRow {
  seconds: number;
  sysSeconds: number;
  switches: number;
  processes: number;
}

/** CPU per label between two samples (a process that started in between counts from zero). */
export function cpuBetween(before: Map<number, ProcSample>, after: Map<number, ProcSample>): Map<string, CpuRow> {
  const out = new Map<string, CpuRow>();
  for (const [pid, now] of after) {
    const was = before.get(pid);
    const seconds = (now.ticks - (was?.ticks ?? 0)) / TICKS_PER_SECOND;
    const row = out.get(now.label) ?? { seconds: 0, sysSeconds: 0, switches: 0, processes: 0 };
    row.seconds += seconds;
    row.sysSeconds += (now.sysTicks - (was?.sysTicks ?? 0)) / TICKS_PER_SECOND;
    row.switches += now.switches - (was?.switches ?? 0);
    if (seconds > 0) row.processes += 1;
    out.set(now.label, row);
  }
  return out;
}

/** The table of `cpuBetween`, biggest first, with CPU seconds per 1,000 requests when given. */
export function formatCpu(rows: Map<string, CpuRow>, wallSeconds: number, requests?: number): string {
  const sorted = [...rows.entries()].filter(([, r]) => r.seconds > 0).sort((a, b) => b[1].seconds - a[1].seconds);
  const total = sorted.reduce((sum, [, r]) => sum + r.seconds, 0);
  const lines = sorted.map(([label, r]) => {
    const per = requests ? `  ${((r.seconds * 1000) / requests).toFixed(2).padStart(6)} ms/req` : '';
    const kernel = r.seconds > 0 ? `  sys ${((100 * r.sysSeconds) / r.seconds).toFixed(0).padStart(3)}%` : '';
    const switches = requests && r.switches > 0 ? `  ${(r.switches / requests).toFixed(2)} switches/req` : '';
    return `    ${label.padEnd(34)} ${r.seconds.toFixed(2).padStart(6)} s  ${((100 * r.seconds) / wallSeconds).toFixed(0).padStart(4)}% of a core  (${r.processes} proc)${per}${kernel}${switches}`;
  });
  const per = requests ? `  ${((total * 1000) / requests).toFixed(2).padStart(6)} ms/req` : '';
  lines.push(`    ${'total'.padEnd(34)} ${total.toFixed(2).padStart(6)} s  ${((100 * total) / wallSeconds).toFixed(0).padStart(4)}% of a core${' '.repeat(10)}${per}`);
  return lines.join('\n');
}

/** This process's reaped children's CPU so far (cutime + cstime, and cstime, seconds): the load generators, which exit before a load's end is sampled. */
export function reapedChildren(): { seconds: number; sysSeconds: number } {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { seconds: (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND, sysSeconds: Number(fields[14]) / TICKS_PER_SECOND };
}

/** The row of the children reaped since `before` (`reapedChildren()`); their switches are not kept. */
export function reapedSince(before: { seconds: number; sysSeconds: number }): CpuRow {
  const now = reapedChildren();
  return { seconds: now.seconds - before.seconds, sysSeconds: now.sysSeconds - before.sysSeconds, switches: 0, processes: 0 };
}

/** The machine's busy and total CPU time so far (seconds, all cores), from `/proc/stat`. */
export function machineSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}
