import { readFileSync } from 'node:fs';

interface ProcStat {
  comm: string;
  state: string;
  ppid: number;
}

/** `/proc/<pid>/stat` (Linux): the command name, state and parent; null when unreadable or gone. */
function procStat(pid: number | 'self'): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')');
    const [state = '', ppid = ''] = stat.slice(close + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), state, ppid: Number(ppid) };
  } catch {
    return null;
  }
}

const procAvailable = (): boolean => procStat('self') !== null;

function isAlive(pid: number): boolean {
  const stat = procStat(pid);
  if (stat !== null) return stat.state !== 'Z' && stat.state !== 'X';
  if (procAvailable()) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ksh', 'ash', 'busybox']);

/**
 * The processes that launched this one: the parent and, while that is a shell (npm and npx run
 * commands through `sh -c`), its parent too, up to the first process that is not a shell (npm).
 */
function launcherChain(): number[] {
  const chain: number[] = [];
  let pid = process.ppid;
  while (pid > 1 && chain.length < 8) {
    chain.push(pid);
    const stat = procStat(pid);
    if (stat === null || !SHELLS.has(stat.comm)) break;
    pid = stat.ppid;
  }
  return chain;
}

/**
 * Calls `onGone` once when a process of the launcher chain has exited (or this one was
 * re-parented). A launcher that dies without passing its signal on (npm or npx killed with
 * SIGKILL, or a shell between it and this process) would otherwise leave the server holding its
 * port and its data directory. `process.ppid` is read once at startup, so the current parent
 * comes from `/proc`. Checks every `everyMs`; the timer does not keep the process alive. Returns
 * the function that stops watching.
 */
export function watchParent(onGone: (launcherPid: number) => void, everyMs = 500): () => void {
  const parent = process.ppid;
  const chain = launcherChain();
  const timer = setInterval(() => {
    const now = procStat('self')?.ppid;
    const gone = now !== undefined && now !== parent ? parent : chain.find((pid) => !isAlive(pid));
    if (gone === undefined) return;
    clearInterval(timer);
    onGone(gone);
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Whether npm (or npx) started this process: `npm start`, `npm run`, `npx holon-xstate`. */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env['npm_lifecycle_event'] !== undefined || env['npm_command'] !== undefined;
}
