/** Where a failed deferred work item is reported (never swallowed silently). */
export type SoonErrorSink = (agentId: string, error: unknown) => void;

const toStderr: SoonErrorSink = (agentId, error) => {
  const detail = error instanceof Error ? error.message : String(error);
  process.stderr.write(`soon: deferred work for agent ${agentId} failed: ${detail}\n`);
};

/**
 * Work per agent deferred to a later turn of the event loop (`setImmediate`): asked for any number
 * of times before then, it runs once, so a burst of operations costs one scheduler step, one
 * retirement check, one launch. A failure is reported to `onError` (stderr by default), never
 * dropped silently.
 */
export class Soon {
  private readonly asked = new Set<string>();

  constructor(
    private readonly work: (agentId: string) => Promise<unknown>,
    private readonly onError: SoonErrorSink = toStderr,
  ) {}

  ask(agentId: string): void {
    if (this.asked.has(agentId)) return;
    this.asked.add(agentId);
    setImmediate(() => {
      this.asked.delete(agentId);
      void this.work(agentId).catch((error: unknown) => this.onError(agentId, error));
    });
  }
}

/** Delay before a batch whose operation failed is asked for again. */
export const SOON_RETRY_MS = 50;

/**
 * Items per agent handled together, soon: `add` queues an item and asks for the agent's next
 * batch on a later turn of the event loop, so everything added in the meantime (a burst of
 * commands ending in one poll phase) shares one operation. The operation `take`s the items when
 * it starts; items added while it waits for its turn in the lane join it. An operation that
 * returns without taking leaves them for the next batch. An operation that fails after taking
 * (a store error under load) puts its items back (ahead of any still waiting), reports the error and asks
 * again after `SOON_RETRY_MS`: a launch or a result is never lost with the error.
 */
export class SoonBatches<T> {
  private readonly items = new Map<string, T[]>();
  private readonly soon: Soon;

  /**
   * `retry: false` for work that may have done what cannot be done twice before it failed (a
   * launch starts processes before its commit): its failure is reported, its items dropped.
   */
  constructor(
    work: (agentId: string, take: () => T[]) => Promise<unknown>,
    private readonly onError: SoonErrorSink = toStderr,
    options: { retry?: boolean } = {},
  ) {
    const retry = options.retry ?? true;
    this.soon = new Soon(async (agentId) => {
      let taken: T[] = [];
      try {
        await work(agentId, () => (taken = this.take(agentId)));
      } catch (error) {
        this.onError(agentId, error);
        if (retry && taken.length > 0) this.retry(agentId, taken);
      }
    }, onError);
  }

  add(agentId: string, item: T): void {
    const queued = this.items.get(agentId);
    if (queued) queued.push(item);
    else this.items.set(agentId, [item]);
    this.soon.ask(agentId);
  }

  private retry(agentId: string, taken: T[]): void {
    this.items.set(agentId, [...taken, ...(this.items.get(agentId) ?? [])]);
    setTimeout(() => this.soon.ask(agentId), SOON_RETRY_MS).unref();
  }

  private take(agentId: string): T[] {
    const items = this.items.get(agentId) ?? [];
    this.items.delete(agentId);
    return items;
  }
}
