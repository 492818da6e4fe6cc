import { describe, expect, it } from 'vitest';
import type { MessageEnvelope, QueueEntryStatus } from '../../src/domain/index.js';
import { copyDoc, newAgentDoc, prune, type AgentDoc } from '../../src/runtime/agent/agent-doc.js';
import { admitMessage, updateMessages, type NewMessage } from '../../src/runtime/agent/messages.js';
import { bodyBytes, isPending, isSettled, tallyAppended, tallyOf } from '../../src/runtime/agent/queue-tally.js';

const NOW = new Date('2026-12-07T08:00:00.000Z');

function input(text: string): NewMessage {
  return { kind: 'operator_prompt', origin: { kind: 'operator' }, authority_class: 'operator_instruction', priority: 'normal', body: { type: 'text', text } } as NewMessage;
}

function message(status: QueueEntryStatus, text: string | null): MessageEnvelope {
  const doc = newAgentDoc('tally', {}, NOW.toISOString());
  const envelope = admitMessage(doc, { ...input(''), body: text === null ? null : { type: 'text', text } }, NOW);
  return { ...envelope, status };
}

/** The tally counted afresh: a copy of the list has no tally of its own yet. */
const recounted = (queue: readonly MessageEnvelope[]) => tallyOf([...queue]);

describe('queue tally', () => {
  // One row per status: what the bounds (pending) and prune (settled) count it as.
  it.each<[QueueEntryStatus, boolean, boolean]>([
    ['queued', true, false],
    ['interrupted', true, false],
    ['dequeued', false, false],
    ['processed', false, true],
    ['aborted', false, true],
    ['dropped', false, true],
  ])('a %s message: pending %s, settled %s', (status, pending, settled) => {
    const m = message(status, 'héllo');
    expect(isPending(m)).toBe(pending);
    expect(isSettled(m)).toBe(settled);
    expect(tallyOf([m])).toEqual({ pending: pending ? 1 : 0, pendingBytes: pending ? 6 : 0, settled: settled ? 1 : 0 });
  });

  it('counts a body as its UTF-8 text, and no body as nothing', () => {
    expect(bodyBytes({ type: 'text', text: 'é' })).toBe(2);
    expect(bodyBytes(null)).toBe(0);
    expect(tallyOf([message('queued', null)]).pendingBytes).toBe(0);
  });

  it('carries a tally over an append only from a counted list, and only to the list it names', () => {
    const counted = [message('queued', 'a')];
    tallyOf(counted);
    const appended = message('queued', 'bb');
    const next = [...counted, appended];
    tallyAppended(counted, next, appended);
    expect(tallyOf(next)).toEqual({ pending: 2, pendingBytes: 3, settled: 0 });
    // A list never counted carries nothing: the next is counted from its own messages.
    const uncounted = [message('processed', 'x')];
    const after = [...uncounted, appended];
    tallyAppended(uncounted, after, appended);
    expect(tallyOf(after)).toEqual({ pending: 1, pendingBytes: 2, settled: 1 });
  });

  it('stays what a fresh count says through appends, status changes and pruning, as a lane drives them', () => {
    let doc: AgentDoc = newAgentDoc('tally', {}, NOW.toISOString());
    const statuses: QueueEntryStatus[] = ['dequeued', 'processed', 'interrupted', 'aborted', 'dropped', 'queued'];
    // A fixed pseudo-random walk (no Math.random: the same steps every run).
    let seed = 7;
    let mostSettled = 0;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let step = 0; step < 600; step++) {
      const base = doc;
      const draft = copyDoc(base);
      const roll = next();
      if (roll < 0.7) admitMessage(draft, input('x'.repeat(1 + Math.floor(next() * 40))), NOW);
      else {
        const status = statuses[Math.floor(next() * statuses.length)] as QueueEntryStatus;
        const cut = Math.floor(next() * draft.queue.length);
        updateMessages(draft, (m) => m.seq % 3 === cut % 3, { status });
      }
      prune(draft, base);
      expect(tallyOf(draft.queue)).toEqual(recounted(draft.queue));
      // admitMessage sets it; a status change's caller does (Turns, Lifecycle).
      if (roll < 0.7) expect(draft.state.pending).toBe(recounted(draft.queue).pending);
      mostSettled = Math.max(mostSettled, tallyOf(draft.queue).settled);
      doc = draft;
    }
    // The walk reached prune's bound (64 settled messages kept), never past it, and left messages pending.
    expect(mostSettled).toBe(64);
    expect(recounted(doc.queue).pending).toBeGreaterThan(0);
  });
});
