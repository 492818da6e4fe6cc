import { textOf, type MessageBody, type MessageEnvelope } from '../../domain/index.js';

/** What an agent's queue holds, as the accept path asks it on every input. */
export interface QueueTally {
  /** Messages still to run: queued, or interrupted by a restart (`isPending`). */
  readonly pending: number;
  /** Bytes of those messages' bodies (`bodyBytes`), what `inboxMaxBytes` bounds. */
  readonly pendingBytes: number;
  /** Messages that are history (`isSettled`), what `prune` keeps a bounded number of. */
  readonly settled: number;
}

/** A message still to run: queued, or interrupted by a restart (replayed). */
export function isPending(message: MessageEnvelope): boolean {
  return message.status === 'queued' || message.status === 'interrupted';
}

/** A message that is history: no code changes it any more. */
export function isSettled(message: MessageEnvelope): boolean {
  return message.status === 'processed' || message.status === 'aborted' || message.status === 'dropped';
}

/** Bytes of a body as the inbox bound counts them: its text (a JSON body rendered), in UTF-8. */
export function bodyBytes(body: MessageBody | null): number {
  return Buffer.byteLength(textOf(body), 'utf8');
}

/**
 * Tallies by list: a queue is never edited in place (a change replaces the list, and a message
 * is replaced, not edited: `updateMessages`), so a list's tally holds for as long as the list lives.
 */
const tallies = new WeakMap<readonly MessageEnvelope[], QueueTally>();

/** The tally of `queue`, counted once per list (or carried over an append: `tallyAppended`). */
export function tallyOf(queue: readonly MessageEnvelope[]): QueueTally {
  let tally = tallies.get(queue);
  if (tally === undefined) {
    let pending = 0;
    let pendingBytes = 0;
    let settled = 0;
    for (const message of queue) {
      if (isPending(message)) {
        pending += 1;
        pendingBytes += bodyBytes(message.body);
      } else if (isSettled(message)) settled += 1;
    }
    tally = { pending, pendingBytes, settled };
    tallies.set(queue, tally);
  }
  return tally;
}

/**
 * Records that `next` is `previous` with `message` appended, so a flood of inputs to one agent
 * counts its queue once, not once per input (each input is a new list). Only for a list just
 * made that way (`appendRecord`); `previous`'s tally is carried only when it was counted.
 */
export function tallyAppended(previous: readonly MessageEnvelope[], next: readonly MessageEnvelope[], message: MessageEnvelope): void {
  const before = tallies.get(previous);
  if (before === undefined) return;
  const pending = isPending(message);
  tallies.set(next, {
    pending: before.pending + (pending ? 1 : 0),
    pendingBytes: before.pendingBytes + (pending ? bodyBytes(message.body) : 0),
    settled: before.settled + (isSettled(message) ? 1 : 0),
  });
}
