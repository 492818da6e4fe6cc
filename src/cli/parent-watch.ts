import { readFileSync } from 'node:fs';

/**
 * The current parent pid. `process.ppid` is read once at startup, so it never shows a
 * re-parenting: on Linux read `/proc/self/stat` (field 4); elsewhere `null` (then only whether
 * the original parent still exists is checked).
 */
function currentParentPid(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Calls `onGone` once when the process that started this one has exited (this process was
 * re-parented, or the original parent no longer exists). A launcher that dies without passing on
 * its signal (`npm start` killed by SIGKILL, or a shell between them) would otherwise leave the
 * server holding its port and its data directory. Checks every `everyMs`; the timer does not keep
 * the process alive. Returns the function that stops watching.
 */
export function watchParent(onGone: (parentPid: number) => void, everyMs = 500): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    const now = currentParentPid();
    const gone = now === null ? !isAlive(parent) : now !== parent;
    if (!gone) return;
    clearInterval(timer);
    onGone(parent);
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Whether npm (or npx) started this process: `npm start`, `npm run`, `npx holon-xstate`. */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  return env['npm_lifecycle_event'] !== undefined || env['npm_command'] !== undefined;
}
