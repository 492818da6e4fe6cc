import { join } from 'node:path';
import { Low } from 'lowdb';
import { DomainError } from '../../domain/index.js';
import { assertFence } from '../shared/lease-rules.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { DurableJsonFile } from './durable-json-file.js';
import { CachedLoad } from './cached-load.js';
import { GroupQueue } from '../shared/group-queue.js';
import type { LeaseFile } from './lease-file.js';
import { GlobalRecord } from './records.js';

interface PendingPut {
  key: string;
  /** The value as JSON will give it back (`undefined` deletes the key). */
  value: unknown;
  fencing_token: number;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * `global.json`: the runtime-global key-value space, kept in memory and rewritten whole (it is
 * small). Puts issued together share one lease read and one durable file write.
 */
export class GlobalSpace {
  private readonly db: Low<GlobalRecord>;
  private readonly queue = new GroupQueue<PendingPut>((batch) => this.flush(batch));
  private readonly loader: CachedLoad;

  constructor(
    dataDir: string,
    directories: DirectorySyncer,
    private readonly lease: LeaseFile,
    generation: () => number,
  ) {
    this.db = new Low<GlobalRecord>(
      new DurableJsonFile<GlobalRecord>(join(dataDir, 'global.json'), (raw) => GlobalRecord.parse(raw), directories),
      {},
    );
    this.loader = new CachedLoad(async () => {
      this.db.data = {};
      await this.db.read();
    }, generation);
  }

  /** Loads global.json (again, when the lease generation moved on since the last load). */
  load(): Promise<void> {
    return this.loader.ensure(this.queue.isIdle());
  }

  /** Forgets the cached file, e.g. when the store is closed. */
  forget(): void {
    this.loader.forget();
  }

  async get(key: string): Promise<unknown> {
    await this.load();
    return Object.hasOwn(this.db.data, key) ? structuredClone(this.db.data[key]) : undefined;
  }

  put(key: string, value: unknown, fencing_token: number): Promise<void> {
    const stored = toJsonValue(key, value);
    return new Promise((resolve, reject) => this.queue.push({ key, value: stored, fencing_token, resolve, reject }));
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async flush(batch: PendingPut[]): Promise<void> {
    await this.loader.ensure(true);
    const lease = await this.lease.read();
    const next: GlobalRecord = { ...this.db.data };
    const accepted: PendingPut[] = [];
    for (const put of batch) {
      try {
        assertFence(lease, put.fencing_token, this.lease.holderOf(put.fencing_token));
      } catch (err) {
        put.reject(err);
        continue;
      }
      if (put.value === undefined) delete next[put.key];
      else Object.defineProperty(next, put.key, { value: put.value, enumerable: true, writable: true, configurable: true });
      accepted.push(put);
    }
    if (accepted.length === 0) return;
    const previous = this.db.data;
    this.db.data = next;
    try {
      await this.db.write();
    } catch (err) {
      this.db.data = previous;
      throw err;
    }
    for (const put of accepted) put.resolve();
  }
}

function toJsonValue(key: string, value: unknown): unknown {
  if (value === undefined) return undefined;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch (err) {
    throw new DomainError('invalid_request', `global ${key} is not JSON-serializable: ${String(err)}`);
  }
}
