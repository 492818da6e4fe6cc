import type { AgentEvent } from '../../domain/index.js';
import type { CommittedEventsWatch, CommittedRange, Store } from '../../store/index.js';
import type { EventBus } from './event-bus.js';
import { KeyedQueue } from './keyed-queue.js';

type Listener = (event: AgentEvent) => void;

/** Events read per page when relaying another node's commit. */
const PAGE = 500;

/**
 * The global stream's events (`GET /api/events/stream`): this node's, as it commits them, and on a
 * store several nodes share also every other node's (issue 19). The store announces the ranges
 * other nodes commit (`Store.watchCommittedEvents`, from its `ready` on); while anyone listens,
 * each range is read back from the store, one agent's ranges one after the other, and handed to
 * the listeners in sequence order. Live only, as the global stream is: a range the store could not be read for is skipped.
 */
export class GlobalEvents {
  private readonly remote = new Set<Listener>();
  private readonly perAgent = new KeyedQueue();
  private watch: CommittedEventsWatch | null = null;

  constructor(
    private readonly bus: Pick<EventBus, 'subscribe'>,
    private readonly store: Pick<Store, 'watchCommittedEvents' | 'readEvents'>,
  ) {}

  subscribe(listener: Listener): () => void {
    const local = this.bus.subscribe(null, listener);
    const watch = this.store.watchCommittedEvents?.bind(this.store);
    if (watch === undefined) return local;
    this.remote.add(listener);
    this.watch ??= watch((range) => void this.perAgent.run(range.agent_id, () => this.relay(range)));
    return () => {
      local();
      this.remote.delete(listener);
      if (this.remote.size === 0) {
        this.watch?.stop();
        this.watch = null;
      }
    };
  }

  /** Resolves once what other nodes commit reaches the subscriptions made so far (`CommittedEventsWatch.ready`). */
  ready(): Promise<void> {
    return this.watch?.ready ?? Promise.resolve();
  }

  private async relay(range: CommittedRange): Promise<void> {
    let after = range.first_seq - 1;
    while (after < range.last_seq && this.remote.size > 0) {
      const page = await this.store
        .readEvents(range.agent_id, { after_seq: after, before_seq: range.last_seq + 1, limit: PAGE, order: 'asc' })
        .catch(() => null); // unreadable now (store down): the live stream goes on without it
      const last = page?.events.at(-1);
      if (!page || last === undefined) return;
      for (const event of page.events) for (const listener of this.remote) listener(event);
      after = last.event_seq;
    }
  }
}
