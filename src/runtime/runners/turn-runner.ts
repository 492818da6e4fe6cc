import type { MessageEnvelope, TurnOffer, TurnResult } from '../../domain/index.js';

/**
 * The port a turn runs through. A runner receives the claimed messages and how the agent got
 * here, and returns facts (actions, text); it never changes agent state itself.
 */
export interface TurnRunner {
  run(offer: TurnOffer, signal: AbortSignal, safePoint?: SafePoint): Promise<TurnResult>;
}

/**
 * A running turn's safe points (holon-reference §3): where its runner takes the messages that
 * arrived since the turn started and may join it (operator interjections, `mayJoinTurn`). Each
 * call is one lane operation of the agent; what it returns is part of the turn from then on
 * (dequeued under the turn's run id, with its decision and continuation recorded).
 */
export interface SafePoint {
  /** Takes what may join now; most of the time nothing (and then no lane operation runs). */
  take(): Promise<MessageEnvelope[]>;
  /** Waits until a message that may join arrives and takes it; `[]` once `signal` aborts. */
  next(signal: AbortSignal): Promise<MessageEnvelope[]>;
}
