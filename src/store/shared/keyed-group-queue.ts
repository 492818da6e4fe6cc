import type { Settleable } from './group-queue.js';

/** A queued request of one key (an agent): the flushes keep each key's requests in order. */
export interface Keyed extends Settleable {
  readonly key: string;
}

export interface KeyedGroupQueueOptions {
  /** Requests per batch at most. */
  maxBatch: number;
  /** Batches flushing at once at most (each on its own connection). */
  maxInFlight: number;
}

/**
 * Group commit with several batches in flight, over disjoint keys: a batch takes, in arrival
 * order, every queued request whose key no flushing batch holds (up to `maxBatch`); a request
 * whose key is in flight waits, and so does every later request of that key, so each key's
 * requests reach the flush in the order queued and no two batches in flight share a key (their
 * transactions touch disjoint rows: none waits for the other, none can see the other half-done).
 * The first flush starts a microtask after the first request, as `GroupQueue`'s does; a batch
 * that ends lets the waiting requests go at once.
 */
export class KeyedGroupQueue<T extends Keyed> {
  private items: T[] = [];
  private readonly busy = new Map<string, number>();
  private flushing = 0;
  private scheduled = false;
  private readonly settled = new Set<() => void>();

  constructor(
    private readonly flush: (batch: T[]) => Promise<void>,
    private readonly options: KeyedGroupQueueOptions,
  ) {}

  push(item: T): void {
    this.items.push(item);
    this.schedule();
  }

  /** Resolves once every request queued so far has been flushed. */
  idle(): Promise<void> {
    if (this.items.length === 0 && this.flushing === 0) return Promise.resolve();
    return new Promise((resolve) => this.settled.add(resolve));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    while (this.flushing < this.options.maxInFlight && this.items.length > 0) {
      const batch = this.take();
      if (batch.length === 0) return;
      this.flushing += 1;
      for (const item of batch) this.busy.set(item.key, (this.busy.get(item.key) ?? 0) + 1);
      void this.run(batch);
    }
  }

  /** The requests the next batch may take, in order; the rest stay queued in order. */
  private take(): T[] {
    const batch: T[] = [];
    const rest: T[] = [];
    const held = new Set<string>();
    for (const item of this.items) {
      if (batch.length < this.options.maxBatch && !this.busy.has(item.key) && !held.has(item.key)) batch.push(item);
      else {
        // A later request of a key that waits must wait too (its order within the key).
        held.add(item.key);
        rest.push(item);
      }
    }
    this.items = rest;
    return batch;
  }

  private async run(batch: T[]): Promise<void> {
    try {
      await this.flush(batch);
    } catch (err) {
      // The flush settles what it can; anything it left pending fails with its error.
      for (const item of batch) item.reject(err);
    } finally {
      this.flushing -= 1;
      for (const item of batch) {
        const left = (this.busy.get(item.key) ?? 1) - 1;
        if (left === 0) this.busy.delete(item.key);
        else this.busy.set(item.key, left);
      }
      this.start();
      if (this.items.length === 0 && this.flushing === 0) {
        for (const resolve of this.settled) resolve();
        this.settled.clear();
      }
    }
  }
}
