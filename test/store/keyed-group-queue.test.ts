import { describe, expect, it } from 'vitest';
import { KeyedGroupQueue } from '../../src/store/shared/keyed-group-queue.js';

interface Item {
  key: string;
  n: number;
  rejected?: unknown;
  reject(err: unknown): void;
}

const item = (key: string, n: number): Item => {
  const it: Item = { key, n, reject: (err) => (it.rejected = err) };
  return it;
};
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A flush that records each batch and finishes when told. */
function recorder() {
  const batches: Array<{ items: string[]; done: () => void }> = [];
  let inFlight = 0;
  let maxSeen = 0;
  const flush = (batch: Item[]): Promise<void> =>
    new Promise((resolve) => {
      inFlight += 1;
      maxSeen = Math.max(maxSeen, inFlight);
      batches.push({ items: batch.map((i) => `${i.key}${i.n}`), done: () => ((inFlight -= 1), resolve()) });
    });
  return { batches, flush, maxSeen: () => maxSeen };
}

describe('KeyedGroupQueue', () => {
  it('batches what one tick queued, then lets disjoint keys flush beside a batch in flight, never one key twice at once', async () => {
    const r = recorder();
    const queue = new KeyedGroupQueue<Item>(r.flush, { maxBatch: 100, maxInFlight: 2 });
    queue.push(item('a', 1));
    queue.push(item('b', 1));
    queue.push(item('a', 2));
    await tick();
    // One batch for the tick, with both of a's (the flush numbers them into rounds).
    expect(r.batches.map((b) => b.items)).toEqual([['a1', 'b1', 'a2']]);
    queue.push(item('a', 3));
    queue.push(item('c', 1));
    queue.push(item('b', 2));
    queue.push(item('d', 1));
    await tick();
    // a and b are in flight: c and d go beside them; a3 and b2 wait.
    expect(r.batches.map((b) => b.items)).toEqual([['a1', 'b1', 'a2'], ['c1', 'd1']]);
    queue.push(item('e', 1));
    await tick();
    // Two batches in flight already: e waits too.
    expect(r.batches).toHaveLength(2);
    r.batches[0]?.done();
    await tick();
    expect(r.batches[2]?.items).toEqual(['a3', 'b2', 'e1']);
    expect(r.maxSeen()).toBe(2);
  });

  it('keeps a key behind its waiting request even when a later batch could take it, and respects maxBatch in order', async () => {
    const r = recorder();
    const queue = new KeyedGroupQueue<Item>(r.flush, { maxBatch: 2, maxInFlight: 3 });
    queue.push(item('a', 1));
    await tick();
    queue.push(item('a', 2));
    queue.push(item('b', 1));
    queue.push(item('c', 1));
    queue.push(item('b', 2));
    await tick();
    // a2 waits for a1; b1, c1 fill a batch of 2; b2 waits (b is in flight), so the third slot has nothing to take.
    expect(r.batches.map((b) => b.items)).toEqual([['a1'], ['b1', 'c1']]);
    r.batches[1]?.done();
    await tick();
    expect(r.batches[2]?.items).toEqual(['b2']);
    r.batches[0]?.done();
    await tick();
    expect(r.batches[3]?.items).toEqual(['a2']);
  });

  it('rejects what a failed flush left pending, goes on with the rest, and idle() waits for everything queued', async () => {
    let calls = 0;
    const flushed: string[] = [];
    const queue = new KeyedGroupQueue<Item>(async (batch) => {
      calls += 1;
      if (calls === 1) throw new Error('connection lost');
      flushed.push(...batch.map((i) => `${i.key}${i.n}`));
    }, { maxBatch: 10, maxInFlight: 2 });
    const first = [item('a', 1), item('b', 1)];
    for (const i of first) queue.push(i);
    await tick();
    const later = item('a', 2);
    queue.push(later);
    await queue.idle();
    expect(first.map((i) => (i.rejected as Error | undefined)?.message)).toEqual(['connection lost', 'connection lost']);
    expect(later.rejected).toBeUndefined();
    expect(flushed).toEqual(['a2']);
    await expect(queue.idle()).resolves.toBeUndefined();
  });
});
