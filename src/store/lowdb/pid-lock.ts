import { link, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { DomainError } from '../../domain/index.js';
import { errorCode, isNotFound, isPidAlive, tempPathFor } from './fs-util.js';

export type PidLockResult = { taken: true } | { taken: false; pid: number };

async function readPid(path: string): Promise<number | null> {
  try {
    const pid = Number.parseInt((await readFile(path, 'utf8')).trim(), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/**
 * Creates the lock file holding our pid. The file is written under a temp name and `link`ed into
 * place, which fails if the lock exists, so a lock file is never seen empty. A lock naming a dead
 * pid is removed and retried. (Two processes breaking the same stale lock at the same instant can
 * race; Node has no flock, and the window is a few syscalls after a crash.)
 */
export async function tryTakePidLock(path: string): Promise<PidLockResult> {
  const temp = tempPathFor(path);
  await writeFile(temp, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      try {
        await link(temp, path);
        return { taken: true };
      } catch (err) {
        if (errorCode(err) !== 'EEXIST') throw err;
      }
      const pid = await readPid(path);
      if (pid !== null && isPidAlive(pid)) return { taken: false, pid };
      await rm(path, { force: true });
    }
    const pid = (await readPid(path)) ?? 0;
    return { taken: false, pid };
  } finally {
    await rm(temp, { force: true });
  }
}

const RETRY_MS = 5;
const MAX_ATTEMPTS = 1000;
/**
 * A read-decide-write takes a few milliseconds. A lock older than this belongs to a holder that
 * is paused (SIGSTOP, a debugger, a frozen VM): it is broken, or a paused old lease holder would
 * block the takeover the lease exists to allow. The broken holder finds out before it writes.
 */
export const STALE_LOCK_MS = 2_000;

/** Tells the code inside the lock whether it still holds it (false once it was broken as stale). */
export type StillHeld = () => Promise<boolean>;

async function lockAgeMs(path: string): Promise<number | null> {
  try {
    return Date.now() - (await stat(path)).mtimeMs;
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/**
 * Runs `fn` holding a short-lived cross-process lock (the lease's read-decide-write). Waits while
 * another live process holds it, breaks it once it is older than {@link STALE_LOCK_MS}, and gives
 * up with `store_unavailable` after ~5 s.
 */
export async function withPidLock<R>(path: string, fn: (stillHeld: StillHeld) => Promise<R>): Promise<R> {
  for (let attempt = 0; ; attempt += 1) {
    const result = await tryTakePidLock(path);
    if (result.taken) break;
    const age = await lockAgeMs(path);
    if (age !== null && age > STALE_LOCK_MS) {
      await rm(path, { force: true });
      continue;
    }
    if (attempt >= MAX_ATTEMPTS) {
      throw new DomainError('store_unavailable', `lock ${path} is held by process ${result.pid}`, { pid: result.pid });
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
  const taken = await stat(path);
  const stillHeld: StillHeld = async () => {
    try {
      const now = await stat(path);
      return now.ino === taken.ino && (await readPid(path)) === process.pid;
    } catch {
      return false;
    }
  };
  try {
    return await fn(stillHeld);
  } finally {
    if (await stillHeld()) await rm(path, { force: true });
  }
}
