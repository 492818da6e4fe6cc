import { readdir, readFile } from 'node:fs/promises';

/**
 * Sends `signal` to every process of group `pgid`. Returns false when the group no longer exists
 * (or may not be signalled); a vanished group is the expected end of a race, not an error.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether any *living* process is still in group `pgid`.
 *
 * `kill(-pgid, 0)` alone is not enough: a zombie stays in its group until reaped, and orphans
 * are reaped by PID 1, which in containers is often a process that never reaps. A zombie has
 * released everything but its process-table slot, so on Linux the members are read from /proc
 * and zombies are ignored. Elsewhere the signal probe is the best available answer.
 */
export async function processGroupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
  const members = await readProcStats();
  if (members === null) return true;
  return members.some((stat) => stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X');
}

/** Whether process `pid` is alive (exists and is not a zombie). */
export async function processAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
  const stat = await readProcStat(String(pid));
  if (stat === null) return process.platform !== 'linux';
  return stat.state !== 'Z' && stat.state !== 'X';
}

interface ProcStat {
  state: string;
  pgrp: number;
}

async function readProcStats(): Promise<ProcStat[] | null> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return null;
  }
  const stats = await Promise.all(entries.filter((name) => /^\d+$/.test(name)).map(readProcStat));
  return stats.filter((stat): stat is ProcStat => stat !== null);
}

async function readProcStat(pid: string): Promise<ProcStat | null> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // Processes come and go while /proc is scanned; a vanished one is simply not a member.
    return null;
  }
  // `pid (comm) state ppid pgrp ...`; comm may itself contain spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const pgrp = Number(fields[2]);
  if (state === undefined || !Number.isInteger(pgrp)) return null;
  return { state, pgrp };
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}
