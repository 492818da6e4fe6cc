/**
 * Requests of one kind to one agent that share an operation. A request joins the agent's
 * operation of its kind while that is queued in the lane and not yet started; otherwise it queues
 * a new one. The operation takes every request that joined it when it starts, handles them in
 * order on one draft and commits once: 100 requests arriving together cost one copy of the
 * document and one commit instead of 100, each growing with the records the previous ones added.
 *
 * Joining a queued operation never moves a request behind one called after it (unlike deferring
 * to a later turn of the event loop): it runs where the first request of its operation would have.
 */
export class SharedOperations<R> {
  private readonly open = new Map<string, R[]>();

  /** `queue` queues the operation in the agent's lane; it calls `take` when it starts (and, if it fails before, to answer them). */
  constructor(private readonly queue: (agentId: string, take: () => R[]) => void) {}

  join(agentId: string, request: R): void {
    const open = this.open.get(agentId);
    if (open) {
      open.push(request);
      return;
    }
    const requests = [request];
    this.open.set(agentId, requests);
    this.queue(agentId, () => {
      if (this.open.get(agentId) === requests) this.open.delete(agentId);
      return requests;
    });
  }
}
