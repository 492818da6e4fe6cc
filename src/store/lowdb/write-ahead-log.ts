import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm, truncate } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { DirectorySyncer } from './directory-syncer.js';
import { fsyncFile, isNotFound, writeAll } from './fs-util.js';
import { decodeFrames } from './wal-frame.js';

const WAL_NAME = /^(\d{16})-[0-9a-z]+\.wal$/;

/**
 * The shared write-ahead log, `wal/<counter>-<instance>.wal`: framed records of every agent's
 * commits, appended batch by batch with one fdatasync each. Every instance appends only to files
 * it created, so a file has one writer and a torn frame can only be its last one. Files are
 * retired (deleted) once a checkpoint has made everything in them durable elsewhere.
 */
export class WriteAheadLog {
  readonly dir: string;
  private readonly instance = randomBytes(4).toString('hex');
  private counter = 0;
  private active: { path: string; handle: FileHandle } | null = null;
  /** Files holding records not yet checkpointed (replayed ones and this instance's closed ones). */
  private pending: string[] = [];
  /** Bytes appended since the last rotation: what the next checkpoint has to cover. */
  bytesSinceRotation = 0;

  constructor(
    dataDir: string,
    private readonly directories: DirectorySyncer,
  ) {
    this.dir = join(dataDir, 'wal');
  }

  async create(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  /**
   * Every whole record of every file but this instance's active one, oldest file first. With
   * `cutTornTails` (only when no other process can be writing), a torn tail is truncated away.
   */
  async readAll(cutTornTails: boolean): Promise<string[]> {
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((name) => WAL_NAME.test(name)).sort();
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    const payloads: string[] = [];
    const files: string[] = [];
    for (const name of names) {
      const path = join(this.dir, name);
      if (path === this.active?.path) continue;
      this.counter = Math.max(this.counter, Number(WAL_NAME.exec(name)?.[1] ?? 0));
      let bytes: Buffer;
      try {
        bytes = await readFile(path);
      } catch (err) {
        // Retired by another instance meanwhile: a checkpoint covered it.
        if (isNotFound(err)) continue;
        throw err;
      }
      const decoded = decodeFrames(bytes);
      if (cutTornTails && decoded.validBytes < bytes.length) {
        await truncate(path, decoded.validBytes);
        await fsyncFile(path);
      }
      payloads.push(...decoded.payloads);
      files.push(path);
    }
    this.pending = files;
    return payloads;
  }

  /** Appends whole frames and fdatasyncs once; the caller's records are durable when it resolves. */
  async append(frames: Buffer): Promise<void> {
    if (this.active === null) {
      this.counter += 1;
      const path = join(this.dir, `${String(this.counter).padStart(16, '0')}-${this.instance}.wal`);
      const handle = await open(path, 'a');
      this.active = { path, handle };
      // The file's directory entry must be durable before its first record is acknowledged.
      await this.directories.sync(this.dir);
    }
    await writeAll(this.active.handle, frames);
    await this.active.handle.datasync();
    this.bytesSinceRotation += frames.length;
  }

  /**
   * Closes the active file (the next append starts a new one) and hands over every file written
   * so far, for a checkpoint to cover and then `retire`. Call it between appends.
   */
  async rotate(): Promise<string[]> {
    const files = this.pending;
    this.pending = [];
    this.bytesSinceRotation = 0;
    if (this.active !== null) {
      const { path, handle } = this.active;
      this.active = null;
      await handle.close();
      files.push(path);
    }
    return files;
  }

  /** A checkpoint failed: its files stay for the next one. */
  restore(files: string[]): void {
    this.pending = [...files, ...this.pending];
  }

  async retire(files: string[]): Promise<void> {
    if (files.length === 0) return;
    await Promise.all(files.map((path) => rm(path, { force: true })));
    await this.directories.sync(this.dir);
  }

  async close(): Promise<void> {
    const active = this.active;
    this.active = null;
    if (active !== null) {
      this.pending.push(active.path);
      await active.handle.close().catch(() => undefined);
    }
  }
}
