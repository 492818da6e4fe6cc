import type { AgentEvent, EventsPage, EventsQuery } from '../domain/index.js';

/** The runtime operations a relay reads from. */
export interface EventSource {
  eventsPage(agent_id: string, query: EventsQuery): Promise<EventsPage>;
  subscribe(agent_id: string | null, listener: (event: AgentEvent) => void): () => void;
  /** Resolves once every agent's subscriptions receive every node's commits. */
  allEventsReady(): Promise<void>;
}

export interface RelayOptions {
  source: Pick<EventSource, 'eventsPage' | 'subscribe'>;
  agentId: string;
  /** Send events with `event_seq` > this; `null` = live tail (from the newest at subscribe time). */
  after: number | null;
  send: (event: AgentEvent) => Promise<void>;
  signal: AbortSignal;
  /** Live events buffered beyond this make the relay give up (`lagging`); the client resumes by cursor. */
  maxBuffered?: number;
  /** How long to wait before re-reading the store when a live event arrives ahead of a gap. */
  gapRetryMs?: number;
  pageSize?: number;
}

export type RelayEnd = 'aborted' | 'lagging';

/** Whether `after` lies in the retained window `[oldest_seq - 1, newest_seq]`. */
export function cursorInWindow(after: number, page: Pick<EventsPage, 'oldest_seq' | 'newest_seq'>): boolean {
  return after >= Math.max(0, page.oldest_seq - 1) && after <= page.newest_seq;
}

function insertSorted(list: AgentEvent[], event: AgentEvent): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as AgentEvent).event_seq > event.event_seq) i -= 1;
  list.splice(i, 0, event);
}

/** Resolves on the next wake-up call, on abort, or after `timeoutMs`; `setWake` installs the wake-up. */
function waitForWake(
  signal: AbortSignal,
  setWake: (wake: (() => void) | null) => void,
  timeoutMs?: number,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      setWake(null);
      if (timer) clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = timeoutMs === undefined ? null : setTimeout(done, timeoutMs);
    setWake(done);
    signal.addEventListener('abort', done, { once: true });
    if (signal.aborted) done();
  });
}

/**
 * Streams an agent's events in `event_seq` order with no gap and no duplicate: it subscribes to
 * live events first (buffering them), then pages the backlog from the store, then drains the
 * buffer, skipping what was already sent. A live event that arrives ahead of a gap is held until
 * the store yields the missing events, so the output is always dense.
 */
export async function relayAgentEvents(options: RelayOptions): Promise<RelayEnd> {
  const { source, agentId, send, signal } = options;
  const maxBuffered = options.maxBuffered ?? 10_000;
  const gapRetryMs = options.gapRetryMs ?? 100;
  const pageSize = options.pageSize ?? 512;

  const pending: AgentEvent[] = [];
  let overflow = false;
  let wake: (() => void) | null = null;
  const unsubscribe = source.subscribe(agentId, (event) => {
    if (overflow) return;
    insertSorted(pending, event);
    if (pending.length > maxBuffered) overflow = true;
    wake?.();
  });

  const idle = (timeoutMs?: number): Promise<void> =>
    waitForWake(signal, (fn) => (wake = fn), timeoutMs);

  /** Sends stored events after `last` (and before `before`), returning the new `last`. */
  const fill = async (from: number, before?: number): Promise<number> => {
    let last = from;
    for (;;) {
      if (signal.aborted) return last;
      const query: EventsQuery = { after_seq: last, limit: pageSize, order: 'asc' };
      if (before !== undefined) query.before_seq = before;
      const page = await source.eventsPage(agentId, query);
      for (const event of page.events) {
        if (event.event_seq <= last) continue;
        if (signal.aborted) return last;
        await send(event);
        last = event.event_seq;
      }
      const target = before !== undefined ? before - 1 : page.newest_seq;
      if (page.events.length === 0 || last >= target) return last;
    }
  };

  try {
    let last =
      options.after ?? (await source.eventsPage(agentId, { limit: 1, order: 'desc' })).newest_seq;
    last = await fill(last);
    while (!signal.aborted) {
      if (overflow) return 'lagging';
      const next = pending[0];
      if (next === undefined) {
        await idle();
        continue;
      }
      if (next.event_seq <= last) {
        pending.shift();
        continue;
      }
      if (next.event_seq > last + 1) {
        last = await fill(last, next.event_seq);
        if (last < next.event_seq - 1) await idle(gapRetryMs);
        continue;
      }
      pending.shift();
      await send(next);
      last = next.event_seq;
    }
    return 'aborted';
  } finally {
    unsubscribe();
  }
}

export interface LiveRelayOptions {
  source: Pick<EventSource, 'subscribe' | 'allEventsReady'>;
  send: (event: AgentEvent) => Promise<void>;
  signal: AbortSignal;
  /** Called once the subscription receives every node's commits (the stream opens then). */
  subscribed?: () => void;
  maxBuffered?: number;
}

/** Live events of every agent, in arrival order; no replay. Gives up (`lagging`) on overflow. */
export async function relayLiveEvents(options: LiveRelayOptions): Promise<RelayEnd> {
  const { source, send, signal } = options;
  const maxBuffered = options.maxBuffered ?? 10_000;
  const pending: AgentEvent[] = [];
  let overflow = false;
  let wake: (() => void) | null = null;
  const unsubscribe = source.subscribe(null, (event) => {
    if (overflow) return;
    pending.push(event);
    if (pending.length > maxBuffered) overflow = true;
    wake?.();
  });
  try {
    await source.allEventsReady();
    options.subscribed?.();
    while (!signal.aborted) {
      if (overflow) return 'lagging';
      const next = pending.shift();
      if (next === undefined) await waitForWake(signal, (fn) => (wake = fn));
      else await send(next);
    }
    return 'aborted';
  } finally {
    unsubscribe();
  }
}
