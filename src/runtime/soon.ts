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
