/**
 * Work per agent deferred to a later turn of the event loop (`setImmediate`): asked for any number
 * of times before then, it runs once, so a burst of operations costs one scheduler step, one
 * retirement check, one launch. A failure is the work's own business (it logs or records it).
 */
export class Soon {
  private readonly asked = new Set<string>();

  constructor(private readonly work: (agentId: string) => Promise<unknown>) {}

  ask(agentId: string): void {
    if (this.asked.has(agentId)) return;
    this.asked.add(agentId);
    setImmediate(() => {
      this.asked.delete(agentId);
      void this.work(agentId).catch(() => undefined);
    });
  }
}

/**
 * Items per agent handled together, soon: `add` queues an item and asks for the agent's next
 * batch on a later turn of the event loop, so everything added in the meantime (a burst of
 * commands ending in one poll phase) shares one operation. The operation `take`s the items when
 * it starts; items added while it waits for its turn in the lane join it. An operation that
 * returns without taking leaves them for the next batch.
 */
export class SoonBatches<T> {
  private readonly items = new Map<string, T[]>();
  private readonly soon: Soon;

  constructor(work: (agentId: string, take: () => T[]) => Promise<unknown>) {
    this.soon = new Soon((agentId) => work(agentId, () => this.take(agentId)));
  }

  add(agentId: string, item: T): void {
    const queued = this.items.get(agentId);
    if (queued) queued.push(item);
    else this.items.set(agentId, [item]);
    this.soon.ask(agentId);
  }

  private take(agentId: string): T[] {
    const items = this.items.get(agentId) ?? [];
    this.items.delete(agentId);
    return items;
  }
}
