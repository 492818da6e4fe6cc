import {
  TRIGGER_KIND_OF,
  type AuthorityClass,
  type MessageBody,
  type MessageEnvelope,
  type MessageKind,
  type MessageOrigin,
  type Priority,
} from '../../domain/index.js';
import { PRIORITY_ORDER } from '../../domain/index.js';
import { isActiveWait, isTerminalTask, type ContinuationTrigger } from '../../../machines/contracts/index.js';
import type { AgentDoc } from './agent-doc.js';
import { appendRecord, RECENT_KEYS_LIMIT } from './agent-doc.js';
import { isPending, tallyAppended, tallyOf } from './queue-tally.js';
import { isoText, newId } from '../clock.js';

export interface NewMessage {
  kind: MessageKind;
  origin: MessageOrigin;
  authority_class: AuthorityClass;
  priority: Priority;
  body: MessageBody | null;
  work_item_id?: string | null;
  task_id?: string | null;
  idempotency_key?: string | null;
  metadata?: Record<string, unknown>;
}

/** Appends a message to the agent's queue and returns it. */
export function admitMessage(doc: AgentDoc, message: NewMessage, now: Date): MessageEnvelope {
  const envelope: MessageEnvelope = {
    id: newId('msg'),
    agent_id: doc.identity.agent_id,
    seq: doc.next_message_seq,
    created_at: isoText(now),
    kind: message.kind,
    origin: message.origin,
    authority_class: message.authority_class,
    priority: message.priority,
    status: 'queued',
    trigger_kind: TRIGGER_KIND_OF[message.kind],
    work_item_id: message.work_item_id ?? null,
    task_id: message.task_id ?? null,
    body: message.body,
    idempotency_key: message.idempotency_key ?? null,
    metadata: message.metadata ?? {},
    run_id: null,
  };
  doc.next_message_seq += 1;
  const before = doc.queue;
  appendRecord(doc, 'queue', envelope);
  tallyAppended(before, doc.queue, envelope);
  doc.state.pending = pendingCount(doc);
  // Replaced, not pushed to: a shallow draft (RunOptions.shallow) shares the head's list.
  if (envelope.idempotency_key) doc.recent_keys = [...doc.recent_keys, envelope.idempotency_key].slice(-RECENT_KEYS_LIMIT);
  return envelope;
}

/**
 * Replaces each queued message `pick` selects by a copy with `change` applied, in a new list (a
 * message is never edited in place: drafts and committed documents share them); returns the
 * replacements in queue order. The list stays as it was when `pick` selects nothing.
 */
export function updateMessages(doc: AgentDoc, pick: (message: MessageEnvelope) => boolean, change: Partial<MessageEnvelope>): MessageEnvelope[] {
  const replaced: MessageEnvelope[] = [];
  const queue = doc.queue.map((message) => {
    if (!pick(message)) return message;
    const next = { ...message, ...change };
    replaced.push(next);
    return next;
  });
  if (replaced.length > 0) doc.queue = queue;
  return replaced;
}

/** How many messages are still to run (`state.pending`, and a wake hint's queue depth). */
export function pendingCount(doc: AgentDoc): number {
  return tallyOf(doc.queue).pending;
}

/** The next message to run: highest lane first, FIFO (by seq) within a lane. */
export function headOfQueue(doc: AgentDoc): MessageEnvelope | null {
  let head: MessageEnvelope | null = null;
  for (const message of doc.queue) {
    if (!isPending(message)) continue;
    if (!head || rank(message) < rank(head) || (rank(message) === rank(head) && message.seq < head.seq)) head = message;
  }
  return head;
}

/** Every message still to run, in the order turns take them: highest lane first, FIFO (by seq) within a lane. */
export function pendingInOrder(doc: AgentDoc): MessageEnvelope[] {
  return doc.queue.filter(isPending).sort((a, b) => rank(a) - rank(b) || a.seq - b.seq);
}

function rank(message: MessageEnvelope): number {
  return PRIORITY_ORDER.indexOf(message.priority);
}

function contentful(body: MessageBody | null): boolean {
  if (!body) return false;
  return body.type === 'json' || body.text.trim().length > 0;
}

/** Builds the continuation trigger of a message (holon-reference §5), or null for reduce-only kinds. */
export function triggerOf(doc: AgentDoc, message: MessageEnvelope): ContinuationTrigger | null {
  if (!message.trigger_kind) return null;
  if (message.trigger_kind === 'task_result') {
    const task = doc.tasks.find((t) => t.id === message.task_id);
    const terminal = task ? isTerminalTask(task.status) : false;
    const waiting = doc.waits.find((w) => w.kind === 'task' && w.subject_ref === message.task_id && isActiveWait(w));
    const ownItem = waiting?.work_item_id ?? doc.state.current_work_item_id;
    return {
      kind: 'task_result',
      contentful: true,
      task_terminal: terminal,
      same_work_item: (task?.work_item_id ?? null) === (ownItem ?? null),
    };
  }
  return { kind: message.trigger_kind, contentful: contentful(message.body) };
}
