import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, unlinkSync, writeSync, ftruncateSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as FsExt from 'fs-ext';
import { errorCode, isNotFound } from './fs-util.js';

// fs-ext is CommonJS with a native addon: loaded through require, typed by @types/fs-ext.
const { flockSync } = createRequire(import.meta.url)('fs-ext') as typeof FsExt;

export type WriterLockResult = { taken: true; lock: WriterLock } | { taken: false; pid: number | null };

/**
 * `writer.lock`: an exclusive `flock(2)` on the file, held for as long as the store is open. The
 * kernel releases it when its holder dies, however it dies (kill -9, a container stopped), so a
 * lock left by a dead instance never blocks a start — whatever pid the new process gets, the old
 * pid it names, or whether that pid is alive again. `flock` locks belong to the open file
 * description, so a second store in the same process is refused too. The file's content (the
 * holder's pid) only names the holder in the error message; it decides nothing.
 */
export class WriterLock {
  private constructor(
    private readonly path: string,
    private fd: number | null,
  ) {}

  /** Takes the lock, or says which process holds it (`null` when it cannot tell). */
  static take(path: string): WriterLockResult {
    for (let attempt = 0; ; attempt += 1) {
      const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
      try {
        flockSync(fd, 'exnb');
      } catch (err) {
        closeSync(fd);
        if (errorCode(err) !== 'EAGAIN' && errorCode(err) !== 'EWOULDBLOCK') throw err;
        return { taken: false, pid: holderPid(path) };
      }
      // A holder that was releasing may have unlinked the file between our open and our lock: then
      // we locked a file nobody else will open. Locked and still the file at `path`, it is ours.
      if (sameFile(fd, path)) {
        ftruncateSync(fd, 0);
        writeSync(fd, `${process.pid}\n`, 0);
        return { taken: true, lock: new WriterLock(path, fd) };
      }
      closeSync(fd);
      if (attempt >= 100) throw new Error(`${path} keeps being replaced while it is locked`);
    }
  }

  /** Removes the file while still holding it (a later opener makes a new one), then lets go. */
  release(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      if (sameFile(fd, this.path)) unlinkSync(this.path);
    } finally {
      closeSync(fd);
    }
  }
}

function sameFile(fd: number, path: string): boolean {
  try {
    return fstatSync(fd).ino === statSync(path).ino;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

function holderPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null;
  }
}
