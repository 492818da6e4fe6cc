import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

interface Entry {
  handle: Promise<FileHandle>;
  users: number;
  broken: boolean;
}

/**
 * Open append-mode handles of event-log segments, shared by path. Appends reuse the open handle
 * (no open/close per commit); idle handles beyond `maxIdle` are closed least-recently-used first,
 * so thousands of agents do not exhaust file descriptors. Handles in use are bounded by the
 * callers (a batch writes a bounded number of agents at a time).
 */
export class AppendHandles {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxIdle = 256) {}

  get openCount(): number {
    return this.entries.size;
  }

  async use<R>(path: string, fn: (handle: FileHandle) => Promise<R>): Promise<R> {
    let entry = this.entries.get(path);
    if (entry === undefined) {
      entry = { handle: open(path, 'a'), users: 0, broken: false };
    } else {
      this.entries.delete(path);
    }
    this.entries.set(path, entry);
    entry.users += 1;
    const used = entry;
    try {
      const handle = await used.handle;
      return await fn(handle);
    } catch (err) {
      // A failed open or write leaves the handle suspect; the next append reopens the file.
      used.broken = true;
      if (this.entries.get(path) === used) this.entries.delete(path);
      throw err;
    } finally {
      used.users -= 1;
      if (used.broken && used.users === 0) await closeQuietly(used);
      await this.trim();
    }
  }

  /** Closes the handle of `path` if it is open (before the file is truncated away or deleted). */
  async close(path: string): Promise<void> {
    const entry = this.entries.get(path);
    if (entry === undefined) return;
    this.entries.delete(path);
    await closeQuietly(entry);
  }

  /** Closes the idle handles of files under `dir` (an evicted agent's segments). */
  async closeUnder(dir: string): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [path, entry] of this.entries) {
      if (entry.users > 0 || !path.startsWith(dir)) continue;
      this.entries.delete(path);
      closing.push(closeQuietly(entry));
    }
    await Promise.all(closing);
  }

  async closeAll(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map(closeQuietly));
  }

  private async trim(): Promise<void> {
    let idle = 0;
    for (const entry of this.entries.values()) if (entry.users === 0) idle += 1;
    const closing: Promise<void>[] = [];
    for (const [path, entry] of this.entries) {
      if (idle <= this.maxIdle) break;
      if (entry.users > 0) continue;
      this.entries.delete(path);
      idle -= 1;
      closing.push(closeQuietly(entry));
    }
    await Promise.all(closing);
  }
}

async function closeQuietly(entry: Entry): Promise<void> {
  try {
    await (await entry.handle).close();
  } catch {
    // Already closed or never opened: nothing is left to release.
  }
}
