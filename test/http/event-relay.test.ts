import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent, EventsPage, EventsQuery } from '../../src/domain/index.js';
import { cursorInWindow, relayAgentEvents, relayLiveEvents, type EventSource } from '../../src/http/event-relay.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An in-memory event log whose live notifications and page reads are delayed by scripted amounts,
 * so a run can deliver a live event before, during or after the backlog read that also contains it,
 * and deliver live events out of order.
 */
class ScriptedLog implements EventSource {
  readonly events: AgentEvent[] = [];
  readonly #listeners = new Set<(event: AgentEvent) => void>();
  #step = 0;

  constructor(
    private readonly notifyDelays: number[],
    private readonly pageDelays: number[],
  ) {}

  #next(delays: number[]): number {
    this.#step += 1;
    return delays.length === 0 ? 0 : (delays[this.#step % delays.length] as number);
  }

  append(count = 1): void {
    for (let i = 0; i < count; i += 1) {
      const seq = this.events.length + 1;
      const event: AgentEvent = { id: `a:${seq}`, event_seq: seq, ts: new Date(0).toISOString(), agent_id: 'a', type: 'wake_hint', payload: { n: seq } };
      this.events.push(event);
      const delay = this.#next(this.notifyDelays);
      for (const listener of [...this.#listeners]) {
        if (delay < 0) listener(event);
        else setTimeout(() => listener(event), delay);
      }
    }
  }

  async eventsPage(_agentId: string, query: EventsQuery): Promise<EventsPage> {
    // The snapshot is taken after the delay, as a store read would see commits made meanwhile.
    await sleep(this.#next(this.pageDelays));
    const after = query.after_seq ?? 0;
    const before = query.before_seq ?? Number.POSITIVE_INFINITY;
    const inRange = this.events.filter((e) => e.event_seq > after && e.event_seq < before);
    const page = query.order === 'asc' ? inRange.slice(0, query.limit) : inRange.slice(-query.limit).reverse();
    const newest = this.events.length;
    return {
      events: page,
      oldest_seq: newest === 0 ? 0 : 1,
      newest_seq: newest,
      cursor_seq: 0,
      has_older: false,
      has_newer: page.length > 0 && Math.max(...page.map((e) => e.event_seq)) < newest,
    };
  }

  subscribe(_agentId: string | null, listener: (event: AgentEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves when `markReady` is called (at once unless `holdReady`). */
  ready: Promise<void> = Promise.resolve();
  markReady: () => void = () => undefined;
  holdReady(): void {
    this.ready = new Promise((resolve) => (this.markReady = resolve));
  }

  allEventsReady(): Promise<void> {
    return this.ready;
  }
}

async function collect(log: ScriptedLog, after: number | null, until: number, pageSize: number): Promise<number[]> {
  const seen: number[] = [];
  const controller = new AbortController();
  const done = relayAgentEvents({
    source: log,
    agentId: 'a',
    after,
    pageSize,
    gapRetryMs: 2,
    signal: controller.signal,
    send: async (event) => {
      seen.push(event.event_seq);
      if (event.event_seq >= until) controller.abort();
    },
  });
  const timeout = setTimeout(() => controller.abort(), 3_000);
  await done;
  clearTimeout(timeout);
  return seen;
}

const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

describe('relayAgentEvents', () => {
  it('sends every event after the cursor exactly once, in order, whatever the interleaving of live delivery and backlog reads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 30 }),
        fc.array(fc.integer({ min: -1, max: 8 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 6 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 7 }),
        async (backlog, liveCount, notifyDelays, pageDelays, bursts, pageSize) => {
          const total = backlog + liveCount;
          fc.pre(total > 0);
          const log = new ScriptedLog(notifyDelays, pageDelays);
          log.append(backlog);
          const after = Math.min(backlog % 3 === 0 ? 0 : Math.floor(backlog / 2), total - 1);
          const producer = (async () => {
            let left = liveCount;
            for (let i = 0; left > 0; i += 1) {
              await sleep(bursts[i % bursts.length] as number);
              const n = Math.min(left, 1 + (i % 3));
              log.append(n);
              left -= n;
            }
          })();
          const seen = await collect(log, after, total, pageSize);
          await producer;
          expect(seen).toEqual(range(after + 1, total));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('starts a live tail at the newest event when no cursor is given', async () => {
    const log = new ScriptedLog([1], [2]);
    log.append(5);
    const seen: number[] = [];
    const controller = new AbortController();
    const done = relayAgentEvents({
      source: log,
      agentId: 'a',
      after: null,
      signal: controller.signal,
      send: async (event) => {
        seen.push(event.event_seq);
        if (event.event_seq === 8) controller.abort();
      },
    });
    await sleep(10);
    log.append(3);
    await done;
    expect(seen).toEqual([6, 7, 8]);
  });

  it('gives up with lagging when the live buffer overflows', async () => {
    const log = new ScriptedLog([-1], []);
    const controller = new AbortController();
    let release: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const done = relayAgentEvents({
      source: log,
      agentId: 'a',
      after: 0,
      maxBuffered: 5,
      signal: controller.signal,
      send: async () => blocked,
    });
    await sleep(5);
    log.append(1);
    await sleep(5);
    log.append(10);
    release();
    expect(await done).toBe('lagging');
  });
});

describe('relayLiveEvents', () => {
  it('forwards live events of every agent in arrival order and unsubscribes on abort', async () => {
    const log = new ScriptedLog([-1], []);
    const seen: number[] = [];
    const controller = new AbortController();
    const done = relayLiveEvents({
      source: log,
      signal: controller.signal,
      send: async (event) => {
        seen.push(event.event_seq);
        if (seen.length === 4) controller.abort();
      },
    });
    log.append(4);
    expect(await done).toBe('aborted');
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('opens (subscribed) only once every node reaches the subscription, and keeps what arrived meanwhile', async () => {
    const log = new ScriptedLog([-1], []);
    log.holdReady();
    const seen: string[] = [];
    const controller = new AbortController();
    const done = relayLiveEvents({
      source: log,
      signal: controller.signal,
      subscribed: () => seen.push('open'),
      send: async (event) => {
        seen.push(String(event.event_seq));
        if (seen.length === 4) controller.abort();
      },
    });
    log.append(2);
    await sleep(5);
    expect(seen).toEqual([]);
    log.markReady();
    log.append(1);
    expect(await done).toBe('aborted');
    expect(seen).toEqual(['open', '1', '2', '3']);
  });
});

describe('cursorInWindow', () => {
  it('accepts [oldest - 1, newest] only', () => {
    expect(cursorInWindow(0, { oldest_seq: 0, newest_seq: 0 })).toBe(true);
    expect(cursorInWindow(1, { oldest_seq: 0, newest_seq: 0 })).toBe(false);
    expect(cursorInWindow(4, { oldest_seq: 5, newest_seq: 9 })).toBe(true);
    expect(cursorInWindow(3, { oldest_seq: 5, newest_seq: 9 })).toBe(false);
    expect(cursorInWindow(9, { oldest_seq: 5, newest_seq: 9 })).toBe(true);
    expect(cursorInWindow(10, { oldest_seq: 5, newest_seq: 9 })).toBe(false);
  });
});
