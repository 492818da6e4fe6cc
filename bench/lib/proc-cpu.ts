import { readdirSync, readFileSync } from 'node:fs';

/** One process's CPU so far (utime + stime, in clock ticks) and what it is. */
interface ProcSample {
  ticks: number;
  label: string;
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
    out.set(pid, { ticks, label });
  }
  return out;
}

/** CPU seconds per label between two samples (a process that started in between counts from zero). */
export function cpuBetween(before: Map<number, ProcSample>, after: Map<number, ProcSample>): Map<string, { seconds: number; processes: number }> {
  const out = new Map<string, { seconds: number; processes: number }>();
  for (const [pid, now] of after) {
    const was = before.get(pid)?.ticks ?? 0;
    const seconds = (now.ticks - was) / TICKS_PER_SECOND;
    const row = out.get(now.label) ?? { seconds: 0, processes: 0 };
    row.seconds += seconds;
    if (seconds > 0) row.processes += 1;
    out.set(now.label, row);
  }
  return out;
}

/** The table of `cpuBetween`, biggest first, with CPU seconds per 1,000 requests when given. */
export function formatCpu(rows: Map<string, { seconds: number; processes: number }>, wallSeconds: number, requests?: number): string {
  const sorted = [...rows.entries()].filter(([, r]) => r.seconds > 0).sort((a, b) => b[1].seconds - a[1].seconds);
  const total = sorted.reduce((sum, [, r]) => sum + r.seconds, 0);
  const lines = sorted.map(([label, r]) => {
    const per = requests ? `  ${((r.seconds * 1000) / requests).toFixed(2).padStart(6)} ms/req` : '';
    return `    ${label.padEnd(34)} ${r.seconds.toFixed(2).padStart(6)} s  ${((100 * r.seconds) / wallSeconds).toFixed(0).padStart(4)}% of a core  (${r.processes} proc)${per}`;
  });
  const per = requests ? `  ${((total * 1000) / requests).toFixed(2).padStart(6)} ms/req` : '';
  lines.push(`    ${'total'.padEnd(34)} ${total.toFixed(2).padStart(6)} s  ${((100 * total) / wallSeconds).toFixed(0).padStart(4)}% of a core${' '.repeat(10)}${per}`);
  return lines.join('\n');
}

/** This process's reaped children's CPU so far (cutime + cstime, seconds): the load generators, which exit before a load's end is sampled. */
export function reapedChildrenSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

/** The machine's busy and total CPU time so far (seconds, all cores), from `/proc/stat`. */
export function machineSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}
