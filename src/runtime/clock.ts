import { randomUUID } from 'node:crypto';

/** The runtime's only source of time; tests and benchmarks may provide their own. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

let stampedMs = Number.NaN;
let stampedText = '';

/**
 * `date` as ISO 8601 text, formatted once per millisecond: one operation stamps its records and
 * events several times within the same millisecond, and `toISOString` is a good part of a small
 * operation's cost.
 */
export function isoText(date: Date): string {
  const ms = date.getTime();
  if (ms !== stampedMs) {
    stampedMs = ms;
    stampedText = date.toISOString();
  }
  return stampedText;
}

/** Ids are prefixed by what they name, so logs and events read on their own. */
export function newId(prefix: string): string {
  // The first 20 hex digits of a v4 UUID (xxxxxxxx-xxxx-4xxx-yxxx-…), dashes left out.
  const uuid = randomUUID();
  return `${prefix}_${uuid.slice(0, 8)}${uuid.slice(9, 13)}${uuid.slice(14, 18)}${uuid.slice(19, 23)}`;
}
