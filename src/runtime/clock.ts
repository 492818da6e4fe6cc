import { randomUUID } from 'node:crypto';

/** The runtime's only source of time; tests and benchmarks may provide their own. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Ids are prefixed by what they name, so logs and events read on their own. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}
