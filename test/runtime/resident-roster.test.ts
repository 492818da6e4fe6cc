import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compactHash, type AgentRoster } from '../../src/runtime/agent/roster.js';
import { ResidentRoster } from '../../src/runtime/host/resident-roster.js';

const hex = (token: string) => createHash('sha256').update(token).digest('hex');

function entry(tokens: string[], pending = 0): AgentRoster {
  return {
    listing: { status: 'asleep', phase: 'sleeping', scheduling_posture: { posture: 'idle', reason: 'no_pending_scheduler_facts' }, pending, current_run_id: null, waiting_reason: null },
    needs_recovery: false,
    trigger_hashes: tokens.map((t) => compactHash(hex(t))),
  } as AgentRoster;
}

describe('ResidentRoster capability lookup', () => {
  it('follows each agent’s active tokens as its entries change, and only its own', () => {
    const index = new ResidentRoster();
    index.set('a', entry(['a1', 'a2']));
    index.set('b', entry(['b1']));
    expect(index.agentForTokenHash(hex('a1'))).toBe('a');
    expect(index.agentForTokenHash(hex('b1'))).toBe('b');

    // A listing change with the same tokens keeps the lookups.
    index.set('a', entry(['a1', 'a2'], 3));
    expect(index.agentForTokenHash(hex('a2'))).toBe('a');
    expect(index.get('a')?.listing.pending).toBe(3);

    // A rotation: the revoked token stops resolving, the new one resolves, b is untouched.
    index.set('a', entry(['a2', 'a3'], 3));
    expect(index.agentForTokenHash(hex('a1'))).toBeUndefined();
    expect(index.agentForTokenHash(hex('a3'))).toBe('a');
    expect(index.agentForTokenHash(hex('b1'))).toBe('b');

    index.set('a', entry([]));
    expect(index.agentForTokenHash(hex('a2'))).toBeUndefined();
    expect(index.ids()).toEqual(['a', 'b']);
  });
});

describe('ResidentRoster paging', () => {
  it('pages after any id, present or not, in order, and says whether more follow', () => {
    const index = new ResidentRoster();
    for (const id of ['d', 'b', 'a', 'e', 'c']) index.set(id, entry([]));
    expect(index.page(undefined, 2)).toEqual({ ids: ['a', 'b'], more: true });
    expect(index.page('b', 2)).toEqual({ ids: ['c', 'd'], more: true });
    expect(index.page('d', 2)).toEqual({ ids: ['e'], more: false });
    expect(index.page('bb', 10)).toEqual({ ids: ['c', 'd', 'e'], more: false });
    expect(index.page('0', 5)).toEqual({ ids: ['a', 'b', 'c', 'd', 'e'], more: false });
    expect(index.page('e', 3)).toEqual({ ids: [], more: false });
    expect(index.page('z', 3)).toEqual({ ids: [], more: false });
  });
});

describe('ResidentRoster search (the inspector’s agent list)', () => {
  const withStatus = (status: AgentRoster['listing']['status']): AgentRoster => ({ ...entry([]), listing: { ...entry([]).listing, status } });

  it('pages the ids containing a text (any case) and of one status, from a cursor, with `more` exact', () => {
    const index = new ResidentRoster();
    for (let i = 0; i < 100_000; i++) index.set(`agent-${String(i).padStart(6, '0')}`, withStatus(i % 1000 === 7 ? 'stopped' : 'asleep'));
    index.set('Builder-X', withStatus('awake_running'));

    // 000007 and 000070-000079 contain it.
    const first = index.page(undefined, 3, { q: '00007' });
    expect(first).toEqual({ ids: ['agent-000007', 'agent-000070', 'agent-000071'], more: true });
    const rest = index.page(first.ids.at(-1), 100, { q: '00007' });
    expect(rest).toEqual({ ids: ['agent-000072', 'agent-000073', 'agent-000074', 'agent-000075', 'agent-000076', 'agent-000077', 'agent-000078', 'agent-000079'], more: false });
    expect(index.page(first.ids.at(-1), 8, { q: '00007' }).more).toBe(false);
    expect(index.page(first.ids.at(-1), 7, { q: '00007' }).more).toBe(true);

    const stopped = index.page(undefined, 512, { status: 'stopped' });
    expect(stopped.ids).toHaveLength(100);
    expect(stopped.more).toBe(false);
    expect(stopped.ids.every((id) => id.endsWith('007'))).toBe(true);
    expect(index.page(undefined, 10, { q: 'builder' }).ids).toEqual(['Builder-X']);
    expect(index.page(undefined, 10, { q: 'builder', status: 'asleep' }).ids).toEqual([]);
    // A status no entry has: nothing, the whole roster scanned once.
    expect(index.page(undefined, 10, { status: 'booting' })).toEqual({ ids: [], more: false });
    // Unfiltered paging is unchanged.
    expect(index.page('agent-099998', 5)).toEqual({ ids: ['agent-099999'], more: false });
    expect(index.page(undefined, 1)).toEqual({ ids: ['Builder-X'], more: true });
  });

  it('reads the tokens of an entry whose timer and stranded waits follow them, even a reason quoting the key', () => {
    const index = new ResidentRoster();
    const quoting = (tokens: string[], reason: string): AgentRoster => ({ ...entry(tokens), next_timer_at: '2026-12-07T00:00:00.000Z', stranded: [{ wait_id: 'w1', reason }] });
    index.set('a', quoting(['a1'], 'no "trigger_hashes":["x"] here'));
    expect(index.agentForTokenHash(hex('a1'))).toBe('a');
    // Same tokens, another reason quoting other hashes: the lookup keeps them.
    index.set('a', quoting(['a1'], '"trigger_hashes":["y"]'));
    expect(index.agentForTokenHash(hex('a1'))).toBe('a');
    // Rotated behind the same quoting reason: the change is seen.
    index.set('a', quoting(['a2'], '"trigger_hashes":["y"]'));
    expect(index.agentForTokenHash(hex('a1'))).toBeUndefined();
    expect(index.agentForTokenHash(hex('a2'))).toBe('a');
  });
});
