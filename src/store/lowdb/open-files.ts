import { closeSync, openSync, writeSync } from 'node:fs';

/**
 * Open append-mode descriptors of the agents' event segments, by path, so a commit neither opens
 * nor closes a segment. Beyond `max` the least recently used is closed, so thousands of agents do
 * not exhaust file descriptors.
 *
 * Appends are synchronous: they only reach the page cache (durability comes from the write-ahead
 * log, then a checkpoint), where a thread-pool round trip costs more than the write.
 */
export class OpenFiles {
  private readonly fds = new Map<string, number>();

  constructor(private readonly max = 1024) {}

  get openCount(): number {
    return this.fds.size;
  }

  append(path: string, buffer: Buffer): void {
    let fd = this.fds.get(path);
    if (fd === undefined) fd = openSync(path, 'a');
    else this.fds.delete(path);
    this.fds.set(path, fd);
    for (const [oldest, oldFd] of this.fds) {
      if (this.fds.size <= this.max) break;
      this.fds.delete(oldest);
      closeQuietly(oldFd);
    }
    try {
      let offset = 0;
      while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
    } catch (err) {
      // A failed write leaves the descriptor suspect; the next append reopens the file.
      this.close(path);
      throw err;
    }
  }

  /** Closes the descriptor of `path` if it is open (before the file is truncated away or deleted). */
  close(path: string): void {
    const fd = this.fds.get(path);
    if (fd === undefined) return;
    this.fds.delete(path);
    closeQuietly(fd);
  }

  /** Closes the descriptors of files under `dir` (an evicted agent's segments). */
  closeUnder(dir: string): void {
    for (const path of [...this.fds.keys()]) if (path.startsWith(dir)) this.close(path);
  }

  closeAll(): void {
    for (const fd of this.fds.values()) closeQuietly(fd);
    this.fds.clear();
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing is left to release.
  }
}
