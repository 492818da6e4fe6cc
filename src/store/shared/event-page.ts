import type { EventPageQuery } from '../store.js';

/**
 * The `event_seq` values a page covers, in the order they are returned, given the retained window
 * `[oldest, newest]` (both 0 when the log is empty). Bounds are exclusive.
 */
export function pageSeqs(query: EventPageQuery, oldest: number, newest: number): number[] {
  if (newest === 0 || query.limit <= 0) return [];
  const low = Math.max(oldest, (query.after_seq ?? 0) + 1);
  const high = Math.min(newest, query.before_seq === undefined ? newest : query.before_seq - 1);
  if (low > high) return [];
  const count = Math.min(Math.floor(query.limit), high - low + 1);
  const seqs: number[] = [];
  for (let i = 0; i < count; i += 1) {
    seqs.push(query.order === 'asc' ? low + i : high - i);
  }
  return seqs;
}
