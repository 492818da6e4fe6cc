import { open, readdir, rename, rm, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { DomainError } from '../../domain/index.js';

export function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

export function isNotFound(err: unknown): boolean {
  return errorCode(err) === 'ENOENT';
}

/** Domain errors pass through; anything else from the file system is `store_unavailable` (retryable). */
export function storeError(what: string, err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  return new DomainError('store_unavailable', `${what}: ${reason}`);
}

/** `EPERM` means the process exists but belongs to someone else: still alive. */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}

/**
 * Makes a directory's entries (created, renamed or removed files) durable. Windows cannot open a
 * directory for fsync; there NTFS metadata journaling is all we get.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

let tempCounter = 0;

/** pid + a process-wide counter: no two writers, in this process or another, share a temp file. */
export function tempPathFor(target: string): string {
  tempCounter += 1;
  return `${target}.${process.pid}.${tempCounter}.tmp`;
}

const TEMP_NAME = /^.+\.(\d+)\.\d+\.tmp$/;

/**
 * Removes temp files left by dead processes (a crash before their rename). They never hold
 * committed data: the rename is the only way a temp file's content becomes visible.
 */
export async function removeDeadTempFiles(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  await Promise.all(
    names.map(async (name) => {
      const pid = TEMP_NAME.exec(name)?.[1];
      if (pid !== undefined && !isPidAlive(Number(pid))) await rm(join(dir, name), { force: true });
    }),
  );
}

/** Makes a file's content durable (a doc.json a checkpoint covers, a truncated segment). */
export async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writeAll(handle: FileHandle, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset);
    offset += bytesWritten;
  }
}

/**
 * Replaces `path` atomically through a temp file and a rename, without fsyncs: a reader (or a
 * process looking after a SIGKILL) sees the old or the new file, never a torn one. Durability
 * against power loss comes from elsewhere (the write-ahead log, then a checkpoint). Creating and
 * renaming an inode waits on the file system's journal, so callers run many in parallel.
 */
export async function replaceFile(path: string, text: string): Promise<void> {
  const temp = tempPathFor(path);
  try {
    await writeFile(temp, text);
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
