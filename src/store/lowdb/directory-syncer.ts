import { fsyncDirectory } from './fs-util.js';

/**
 * Coalesces directory fsyncs. A request joins a sync of the same directory that has not started
 * yet; a request arriving while one is running queues exactly one follow-up sync (the running one
 * may have missed the caller's rename). Under load, every rename in a directory that lands during
 * one fsync shares the next one.
 */
export class DirectorySyncer {
  private readonly waiting = new Map<string, Promise<void>>();
  private readonly running = new Map<string, Promise<void>>();

  sync(dir: string): Promise<void> {
    const waiting = this.waiting.get(dir);
    if (waiting !== undefined) return waiting;
    const previous = this.running.get(dir) ?? Promise.resolve();
    const run: Promise<void> = previous
      .catch(() => undefined)
      .then(async () => {
        if (this.waiting.get(dir) === run) this.waiting.delete(dir);
        this.running.set(dir, run);
        try {
          await fsyncDirectory(dir);
        } finally {
          if (this.running.get(dir) === run) this.running.delete(dir);
        }
      });
    this.waiting.set(dir, run);
    return run;
  }
}
