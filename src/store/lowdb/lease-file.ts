import { join } from 'node:path';
import { Low } from 'lowdb';
import { decideAcquire, decideRelease, decideRenew } from '../shared/lease-rules.js';
import type { Lease } from '../store.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { DurableJsonFile } from './durable-json-file.js';
import { DomainError } from '../../domain/index.js';
import { withPidLock, type StillHeld } from './pid-lock.js';
import { LeaseRecord } from './records.js';

/**
 * `lease.json`: the file is the truth, shared by every process that opens the data directory.
 * Acquire/renew/release are read-decide-write under `lease.lock` (so two processes cannot both
 * take the same token); fencing checks re-read the file on every flush.
 */
export class LeaseFile {
  private readonly file: DurableJsonFile<Lease | null>;
  private readonly db: Low<Lease | null>;
  private readonly lockPath: string;
  private chain: Promise<unknown> = Promise.resolve();
  /** The holder this instance acquired each token as: a token is ours only while the file names it. */
  private readonly holders = new Map<number, string>();

  constructor(dataDir: string, directories: DirectorySyncer) {
    this.file = new DurableJsonFile<Lease | null>(join(dataDir, 'lease.json'), (raw) => LeaseRecord.parse(raw), directories);
    this.db = new Low<Lease | null>(this.file, null);
    this.lockPath = join(dataDir, 'lease.lock');
  }

  /** Straight from disk (not lowdb's cached `data`): a fenced process must see the takeover. */
  read(): Promise<Lease | null> {
    return this.db.adapter.read();
  }

  /** `read` without leaving the thread: the fence check of every commit batch. */
  readForFence(): Lease | null {
    return this.file.readSync();
  }

  holderOf(fencing_token: number): string | undefined {
    return this.holders.get(fencing_token);
  }

  acquire(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    return this.locked(async (stillHeld) => {
      const next = decideAcquire(await this.read(), holder, ttl_ms, now);
      await this.store(next, stillHeld);
      this.holders.set(next.fencing_token, next.holder);
      return { ...next };
    });
  }

  renew(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    return this.locked(async (stillHeld) => {
      const next = decideRenew(await this.read(), lease, ttl_ms, now);
      await this.store(next, stillHeld);
      return { ...next };
    });
  }

  release(lease: Lease): Promise<void> {
    return this.locked(async (stillHeld) => {
      const next = decideRelease(await this.read(), lease);
      if (next !== null) await this.store(next, stillHeld);
    });
  }

  /** Resolves once lease operations started so far have finished. */
  async idle(): Promise<void> {
    await this.chain;
  }

  /** Writes the decision, unless the lock was broken while this holder was paused mid-decision. */
  private async store(lease: Lease, stillHeld: StillHeld): Promise<void> {
    if (!(await stillHeld())) throw new DomainError('lease_lost', 'the lease lock was taken over while this process was paused');
    this.db.data = lease;
    await this.db.write();
  }

  private locked<R>(fn: (stillHeld: StillHeld) => Promise<R>): Promise<R> {
    const run = this.chain.then(() => withPidLock(this.lockPath, fn));
    this.chain = run.catch(() => undefined);
    return run;
  }
}
