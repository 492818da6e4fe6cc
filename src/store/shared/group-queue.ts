/** A queued request that the flush settles. */
export interface Settleable {
  reject(err: unknown): void;
}

/**
 * Group commit: requests queue up; one flush at a time takes everything queued so far as a batch.
 * The first flush starts a microtask after the first request, so requests issued in the same tick
 * share it; requests arriving while a flush runs form the next batch (at most `maxBatch` of them;
 * the rest wait for the one after).
 */
export class GroupQueue<T extends Settleable> {
  private items: T[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly flush: (batch: T[]) => Promise<void>,
    private readonly maxBatch = Number.POSITIVE_INFINITY,
  ) {}

  push(item: T): void {
    this.items.push(item);
    this.kick();
  }

  /** No request is queued and no flush is running. */
  isIdle(): boolean {
    return this.running === null && this.items.length === 0;
  }

  /** Resolves once every request queued so far has been flushed. */
  async idle(): Promise<void> {
    while (this.running !== null) await this.running;
  }

  private kick(): void {
    if (this.running !== null) return;
    this.running = this.drain().finally(() => {
      this.running = null;
      if (this.items.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    await Promise.resolve();
    while (this.items.length > 0) {
      let batch = this.items;
      if (batch.length > this.maxBatch) {
        this.items = batch.slice(this.maxBatch);
        batch = batch.slice(0, this.maxBatch);
      } else {
        this.items = [];
      }
      try {
        await this.flush(batch);
      } catch (err) {
        // The flush settles what it can; anything it left pending fails with its error.
        for (const item of batch) item.reject(err);
      }
    }
  }
}
