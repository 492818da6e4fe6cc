import { DomainError } from '../../domain/index.js';
import type { AgentCell } from '../agent/agent-cell.js';
import { tallyOf } from '../agent/queue-tally.js';

/** The inbox bounds (RuntimeOptions `inboxMaxMessages`, `inboxMaxBytes`, `ingressMaxInFlight`). */
export interface InboxLimits {
  /** Messages one agent may hold pending (queued, or accepted and not yet answered). */
  maxMessages: number;
  /** Bytes of body text those messages may hold together. */
  maxBytes: number;
  /** Inputs (prompts, events, callbacks, wake hints) accepted and not yet answered, process-wide. */
  maxInFlight: number;
}

/** What a refused input is told to wait before it tries again (`Retry-After`, seconds). */
export const INBOX_RETRY_AFTER_S = 1;

interface Reserved {
  count: number;
  bytes: number;
}

/**
 * Backpressure at the edge: an input is let in only while the agent's inbox (its pending messages
 * in the lane's head plus the inputs accepted and not yet answered) stays within the agent's bounds
 * and the runtime's inputs in flight within the process-wide one; otherwise it is refused with
 * 429 `inbox_full` before anything is queued or recorded. The check reads memory only, so a
 * refusal never waits behind the agent's lane.
 */
export class InboxBounds {
  private inFlight = 0;
  private readonly reserved = new Map<string, Reserved>();

  constructor(private readonly limits: InboxLimits) {}

  /**
   * Reserves room for one input of `bytes` to `cell`'s agent until the returned release runs (once
   * the input is answered or refused). An agent that is stopped or terminated is let through, so
   * its exact refusal (409) comes from its lane.
   */
  reserve(cell: AgentCell, bytes: number): () => void {
    const head = cell.head;
    const open = head.state.status !== 'stopped' && head.state.phase !== 'terminated';
    if (this.inFlight + 1 > this.limits.maxInFlight) {
      throw full('process', `the runtime has ${this.inFlight} inputs in flight (ingressMaxInFlight ${this.limits.maxInFlight})`);
    }
    const mine = this.reserved.get(cell.id) ?? { count: 0, bytes: 0 };
    if (open) {
      // Counted once per queue list, and carried over each input's append (`tallyAppended`).
      const pending = tallyOf(head.queue);
      const count = mine.count + 1 + pending.pending;
      const total = mine.bytes + bytes + pending.pendingBytes;
      if (count > this.limits.maxMessages) throw full('agent', `agent ${cell.id} has ${count - 1} messages pending (inboxMaxMessages ${this.limits.maxMessages})`);
      if (total > this.limits.maxBytes) throw full('agent', `agent ${cell.id} would hold ${total} bytes pending (inboxMaxBytes ${this.limits.maxBytes})`);
    }
    mine.count += 1;
    mine.bytes += bytes;
    this.reserved.set(cell.id, mine);
    this.inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight -= 1;
      mine.count -= 1;
      mine.bytes -= bytes;
      if (mine.count === 0 && this.reserved.get(cell.id) === mine) this.reserved.delete(cell.id);
    };
  }
}

function full(scope: 'agent' | 'process', message: string): DomainError {
  return new DomainError('inbox_full', `${message}; nothing was queued, retry after ${INBOX_RETRY_AFTER_S} s`, { scope, retry_after_s: INBOX_RETRY_AFTER_S });
}
