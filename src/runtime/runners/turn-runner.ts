import type { TurnOffer, TurnResult } from '../../domain/index.js';

/**
 * The port a turn runs through. A runner receives the claimed messages and how the agent got
 * here, and returns facts (actions, text); it never changes agent state itself.
 */
export interface TurnRunner {
  run(offer: TurnOffer, signal: AbortSignal): Promise<TurnResult>;
}
