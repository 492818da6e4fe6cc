import { closeSync, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { isNotFound } from './fs-util.js';

interface Entry {
  fd: number;
  /** The file's length as this process left it (it is the file's only writer). */
  size: number;
}

/**
 * Open descriptors of the agents' files (event segments appended to, doc.json rewritten in
 * place), by path, so a commit neither opens nor closes a file. Beyond `max` the least recently
 * used is closed, so thousands of agents do not exhaust file descriptors.
 *
 * Writes are synchronous: they only reach the page cache (durability comes from the write-ahead
 * log, then a checkpoint), where a thread-pool round trip costs more than the write.
 */
export class OpenFiles {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly max = 4096) {}

  get openCount(): number {
    return this.entries.size;
  }

  append(path: string, buffer: Buffer): void {
    const entry = this.entry(path, 'a');
    this.write(path, entry, buffer, entry.size);
  }

  /**
   * Rewrites an existing file in place, padded with trailing spaces (JSON allows them) to at
   * least its old length, so no moment leaves old bytes after the new text; it shrinks only once
   * the padding outweighs the text. Returns `false` when the file does not exist.
   *
   * Not atomic: a SIGKILL in the middle of a multi-page write can leave a torn file, so only
   * write-ahead-logged content is written this way (recovery rewrites it at the next open).
   */
  overwrite(path: string, text: string): boolean {
    let entry: Entry;
    try {
      entry = this.entry(path, 'r+');
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    const bytes = Buffer.from(text, 'utf8');
    const padded = entry.size > bytes.length ? Buffer.concat([bytes, Buffer.alloc(entry.size - bytes.length, 0x20)]) : bytes;
    this.write(path, entry, padded, 0);
    if (entry.size > 2 * bytes.length) {
      ftruncateSync(entry.fd, bytes.length);
      entry.size = bytes.length;
    }
    return true;
  }

  /** Closes the descriptor of `path` if it is open (before the file is truncated away or deleted). */
  close(path: string): void {
    const entry = this.entries.get(path);
    if (entry === undefined) return;
    this.entries.delete(path);
    closeQuietly(entry.fd);
  }

  /** Closes the descriptors of files under `dir` (an evicted agent's files). */
  closeUnder(dir: string): void {
    for (const path of [...this.entries.keys()]) if (path.startsWith(dir)) this.close(path);
  }

  closeAll(): void {
    for (const entry of this.entries.values()) closeQuietly(entry.fd);
    this.entries.clear();
  }

  private entry(path: string, flags: 'a' | 'r+'): Entry {
    let entry = this.entries.get(path);
    if (entry === undefined) {
      const fd = openSync(path, flags);
      entry = { fd, size: fstatSync(fd).size };
    } else {
      this.entries.delete(path);
    }
    this.entries.set(path, entry);
    for (const [oldest, old] of this.entries) {
      if (this.entries.size <= this.max) break;
      this.entries.delete(oldest);
      closeQuietly(old.fd);
    }
    return entry;
  }

  private write(path: string, entry: Entry, buffer: Buffer, position: number): void {
    try {
      let offset = 0;
      while (offset < buffer.length) offset += writeSync(entry.fd, buffer, offset, buffer.length - offset, position + offset);
      entry.size = Math.max(entry.size, position + buffer.length);
    } catch (err) {
      // A failed write leaves the descriptor suspect; the next use reopens the file.
      this.close(path);
      throw err;
    }
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing is left to release.
  }
}
