import { DomainError, textOf, type MessageBody, type MessageEnvelope } from '../../domain/index.js';
import type { AgentCell } from '../agent/agent-cell.js';
import type { AgentDoc } from '../agent/agent-doc.js';
import { isPending } from '../agent/messages.js';

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

/** Bytes of a body as the bound counts them: its text (a JSON body rendered), in UTF-8. */
export function bodyBytes(body: MessageBody | null): number {
  return Buffer.byteLength(textOf(body), 'utf8');
}

/** Body sizes of queued messages, computed once per envelope (drafts share unchanged envelopes). */
const sizes = new WeakMap<MessageEnvelope, number>();

function sizeOf(message: MessageEnvelope): number {
  let size = sizes.get(message);
  if (size === undefined) {
    size = bodyBytes(message.body);
    sizes.set(message, size);
  }
  return size;
}

interface Reserved {
  count: number;
  bytes: number;
}

/**
 * The pending messages of a document the lane built on, counted once per document: a committed
 * (issued) document is never edited again, and a flood of inputs to one agent checks the same
 * head many times between two commits (each refusal would scan the whole queue again).
 */
const pendingOf = new WeakMap<AgentDoc, Reserved>();

function pendingIn(doc: AgentDoc): Reserved {
  let pending = pendingOf.get(doc);
  if (pending === undefined) {
    pending = { count: 0, bytes: 0 };
    for (const message of doc.queue) {
      if (!isPending(message)) continue;
      pending.count += 1;
      pending.bytes += sizeOf(message);
    }
    pendingOf.set(doc, pending);
  }
  return pending;
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
      const pending = pendingIn(head);
      const count = mine.count + 1 + pending.count;
      const total = mine.bytes + bytes + pending.bytes;
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
