import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/index.js';
import type { ErrorCode } from '../../src/domain/index.js';
import type { Commit, Lease, NewEvent, Store } from '../../src/store/index.js';
import { agentLeaseContract, type AgentLeaseMode } from './agent-lease-contract.js';
import { clusterContract } from './cluster-contract.js';
import { rosterQueryContract } from './roster-query-contract.js';

export const T0 = new Date('2030-01-01T00:00:00.000Z');
export const TTL_MS = 60_000;

export function at(ms: number): Date {
  return new Date(T0.getTime() + ms);
}

/** Awaits a rejection and checks it is the given DomainError code. */
export async function rejection(promise: Promise<unknown>, code: ErrorCode): Promise<DomainError> {
  const outcome = await promise.then(
    (value: unknown) => ({ rejected: false as const, value }),
    (error: unknown) => ({ rejected: true as const, error }),
  );
  if (!outcome.rejected) throw new Error(`expected ${code}, but it resolved with ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(DomainError);
  const error = outcome.error as DomainError;
  expect(error.code).toBe(code);
  return error;
}

export function newEvents(count: number, tag = 'e'): NewEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'transition_committed' as const,
    payload: { tag, i },
    ts: at(i).toISOString(),
  }));
}

export function commitOf(
  lease: Lease,
  agent_id: string,
  expected_version: number | null,
  doc: unknown,
  events: NewEvent[] = [],
): Commit {
  return { agent_id, expected_version, doc, events, fencing_token: lease.fencing_token };
}

/**
 * The behaviour every Store implementation shares. `makeStore` returns a new, empty, unopened
 * store; the suite opens and closes it. `agentLeases` says how the store keeps agent leases.
 */
export function storeContract(name: string, makeStore: () => Promise<Store>, agentLeases: AgentLeaseMode = 'store-lease'): void {
  describe(`${name} store contract`, () => {
    let store: Store;
    let lease: Lease;

    beforeEach(async () => {
      store = await makeStore();
      await store.open();
      lease = await store.acquireLease('holder-a', TTL_MS, T0);
    });

    afterEach(async () => {
      await store.close();
    });

    const leaseContext = { store: () => store, lease: () => lease, ttl: TTL_MS, rejection, at };
    agentLeaseContract(agentLeases, leaseContext);
    clusterContract(agentLeases, leaseContext);
    rosterQueryContract(leaseContext);

    describe('agents', () => {
      it('creates, loads and commits an agent round trip', async () => {
        const created = await store.commit(commitOf(lease, 'agent-1', null, { n: 1 }, newEvents(2)));
        expect(created.version).toBe(1);
        expect(created.events.map((e) => e.event_seq)).toEqual([1, 2]);
        expect(created.events[0]).toEqual({
          id: expect.any(String),
          event_seq: 1,
          ts: at(0).toISOString(),
          agent_id: 'agent-1',
          type: 'transition_committed',
          payload: { tag: 'e', i: 0 },
        });
        expect(await store.loadAgent('agent-1')).toEqual({ version: 1, doc: { n: 1 }, last_event_seq: 2 });

        const next = await store.commit(commitOf(lease, 'agent-1', 1, { n: 2, nested: { list: [1, 2] } }, newEvents(1)));
        expect(next.version).toBe(2);
        expect(await store.loadAgent('agent-1')).toEqual({
          version: 2,
          doc: { n: 2, nested: { list: [1, 2] } },
          last_event_seq: 3,
        });
      });

      it('returns null for an unknown agent and lists created agents sorted', async () => {
        expect(await store.loadAgent('nobody')).toBeNull();
        expect(await store.listAgentIds()).toEqual([]);
        await store.commit(commitOf(lease, 'b-agent', null, {}));
        await store.commit(commitOf(lease, 'a-agent', null, {}));
        expect(await store.listAgentIds()).toEqual(['a-agent', 'b-agent']);
      });

      it('increments the version by one per commit, with or without events', async () => {
        const versions: number[] = [];
        let expected: number | null = null;
        for (let i = 0; i < 4; i += 1) {
          const result = await store.commit(commitOf(lease, 'agent-v', expected, { i }, newEvents(i % 2)));
          versions.push(result.version);
          expected = result.version;
        }
        expect(versions).toEqual([1, 2, 3, 4]);
        expect(await store.loadAgent('agent-v')).toEqual({ version: 4, doc: { i: 3 }, last_event_seq: 2 });
      });

      it('refuses a stale expected_version with version_conflict and changes nothing', async () => {
        await store.commit(commitOf(lease, 'agent-c', null, { v: 1 }, newEvents(1)));
        await store.commit(commitOf(lease, 'agent-c', 1, { v: 2 }, newEvents(1)));

        const error = await rejection(store.commit(commitOf(lease, 'agent-c', 1, { v: 'stale' }, newEvents(3))), 'version_conflict');
        expect(error.details).toEqual({ current_version: 2 });
        expect(await store.loadAgent('agent-c')).toEqual({ version: 2, doc: { v: 2 }, last_event_seq: 2 });
        const page = await store.readEvents('agent-c', { limit: 10, order: 'asc' });
        expect(page.events.map((e) => e.event_seq)).toEqual([1, 2]);
        expect(page.newest_seq).toBe(2);
      });

      it('refuses to create an agent that exists', async () => {
        await store.commit(commitOf(lease, 'agent-x', null, { first: true }));
        const error = await rejection(store.commit(commitOf(lease, 'agent-x', null, { second: true }, newEvents(1))), 'version_conflict');
        expect(error.details).toEqual({ current_version: 1 });
        expect(await store.loadAgent('agent-x')).toEqual({ version: 1, doc: { first: true }, last_event_seq: 0 });
      });

      it('refuses a numeric expected_version for an agent that does not exist', async () => {
        const error = await rejection(store.commit(commitOf(lease, 'ghost', 1, {})), 'version_conflict');
        expect(error.details).toEqual({ current_version: null });
        expect(await store.loadAgent('ghost')).toBeNull();
        expect(await store.listAgentIds()).toEqual([]);
      });

      it('refuses agent ids that are not valid AgentIds', async () => {
        await rejection(store.commit(commitOf(lease, '../escape', null, {})), 'invalid_request');
        await rejection(store.loadAgent('a/b'), 'invalid_request');
        await rejection(store.readEvents('', { limit: 1, order: 'asc' }), 'invalid_request');
      });

      // The committed document itself belongs to the store once committed (Store.commit), so only
      // the event payloads handed in, and everything handed out, are mutated here.
      it('returns copies: mutating loaded, committed payloads or returned objects does not change the store', async () => {
        const doc = { list: [1, 2], inner: { x: 1 } };
        const payload = { deep: { y: 1 } };
        const result = await store.commit(
          commitOf(lease, 'agent-copy', null, doc, [{ type: 'agent_created', payload, ts: T0.toISOString() }]),
        );
        payload.deep.y = 99;
        result.events[0]!.payload['deep'] = 'mutated';

        const loaded = await store.loadAgent('agent-copy');
        expect(loaded?.doc).toEqual({ list: [1, 2], inner: { x: 1 } });
        (loaded?.doc as { list: number[] }).list.push(4);
        expect((await store.loadAgent('agent-copy'))?.doc).toEqual({ list: [1, 2], inner: { x: 1 } });

        const page = await store.readEvents('agent-copy', { limit: 1, order: 'asc' });
        expect(page.events[0]?.payload).toEqual({ deep: { y: 1 } });
        page.events[0]!.payload['deep'] = 'mutated again';
        expect((await store.readEvents('agent-copy', { limit: 1, order: 'asc' })).events[0]?.payload).toEqual({
          deep: { y: 1 },
        });
      });
    });

    describe('events', () => {
      it('gives dense, consecutive event_seqs across commits and unique ids', async () => {
        const a = await store.commit(commitOf(lease, 'agent-s', null, {}, newEvents(3)));
        const b = await store.commit(commitOf(lease, 'agent-s', 1, {}, []));
        const c = await store.commit(commitOf(lease, 'agent-s', 2, {}, newEvents(2)));
        expect(a.events.map((e) => e.event_seq)).toEqual([1, 2, 3]);
        expect(b.events).toEqual([]);
        expect(c.events.map((e) => e.event_seq)).toEqual([4, 5]);
        const page = await store.readEvents('agent-s', { limit: 100, order: 'asc' });
        expect(page.events.map((e) => e.event_seq)).toEqual([1, 2, 3, 4, 5]);
        expect(new Set(page.events.map((e) => e.id)).size).toBe(5);
        expect(page.events).toEqual([...a.events, ...c.events]);
      });

      it('keeps each agent its own sequence', async () => {
        await store.commit(commitOf(lease, 'agent-p', null, {}, newEvents(2)));
        const other = await store.commit(commitOf(lease, 'agent-q', null, {}, newEvents(1)));
        expect(other.events[0]?.event_seq).toBe(1);
      });

      describe('paging', () => {
        beforeEach(async () => {
          let expected: number | null = null;
          for (let i = 0; i < 5; i += 1) {
            expected = (await store.commit(commitOf(lease, 'agent-page', expected, { i }, newEvents(4, `c${i}`)))).version;
          }
        });

        const seqs = async (query: Parameters<Store['readEvents']>[1]): Promise<number[]> =>
          (await store.readEvents('agent-page', query)).events.map((e) => e.event_seq);

        it('pages ascending with after_seq and limit', async () => {
          expect(await seqs({ limit: 5, order: 'asc' })).toEqual([1, 2, 3, 4, 5]);
          expect(await seqs({ after_seq: 5, limit: 5, order: 'asc' })).toEqual([6, 7, 8, 9, 10]);
          expect(await seqs({ after_seq: 18, limit: 5, order: 'asc' })).toEqual([19, 20]);
          expect(await seqs({ after_seq: 20, limit: 5, order: 'asc' })).toEqual([]);
        });

        it('pages descending with before_seq and limit', async () => {
          expect(await seqs({ limit: 3, order: 'desc' })).toEqual([20, 19, 18]);
          expect(await seqs({ before_seq: 18, limit: 3, order: 'desc' })).toEqual([17, 16, 15]);
          expect(await seqs({ before_seq: 3, limit: 5, order: 'desc' })).toEqual([2, 1]);
          expect(await seqs({ before_seq: 1, limit: 5, order: 'desc' })).toEqual([]);
        });

        it('applies both exclusive bounds together in either order', async () => {
          expect(await seqs({ after_seq: 4, before_seq: 9, limit: 100, order: 'asc' })).toEqual([5, 6, 7, 8]);
          expect(await seqs({ after_seq: 4, before_seq: 9, limit: 100, order: 'desc' })).toEqual([8, 7, 6, 5]);
          expect(await seqs({ after_seq: 4, before_seq: 9, limit: 2, order: 'desc' })).toEqual([8, 7]);
          expect(await seqs({ after_seq: 4, before_seq: 9, limit: 2, order: 'asc' })).toEqual([5, 6]);
          expect(await seqs({ after_seq: 8, before_seq: 9, limit: 2, order: 'asc' })).toEqual([]);
        });

        it('reports the retained window whatever the page', async () => {
          const page = await store.readEvents('agent-page', { after_seq: 100, limit: 1, order: 'asc' });
          expect(page).toEqual({ events: [], oldest_seq: 1, newest_seq: 20 });
          const first = await store.readEvents('agent-page', { limit: 1, order: 'asc' });
          expect(first.events[0]?.payload).toEqual({ tag: 'c0', i: 0 });
          expect([first.oldest_seq, first.newest_seq]).toEqual([1, 20]);
        });

        it('returns an empty window for an agent without events or without a record', async () => {
          await store.commit(commitOf(lease, 'agent-quiet', null, {}));
          expect(await store.readEvents('agent-quiet', { limit: 10, order: 'desc' })).toEqual({
            events: [],
            oldest_seq: 0,
            newest_seq: 0,
          });
          expect(await store.readEvents('agent-none', { limit: 10, order: 'asc' })).toEqual({
            events: [],
            oldest_seq: 0,
            newest_seq: 0,
          });
        });
      });
    });

    describe('concurrency', () => {
      it('lets exactly one of several concurrent commits with the same expected_version win', async () => {
        await store.commit(commitOf(lease, 'agent-race', null, { winner: null }));
        const attempts = [0, 1, 2, 3, 4].map((i) =>
          store.commit(commitOf(lease, 'agent-race', 1, { winner: i }, newEvents(2, `w${i}`))),
        );
        const settled = await Promise.allSettled(attempts);
        const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const s of settled) {
          if (s.status === 'rejected') {
            expect(s.reason).toBeInstanceOf(DomainError);
            expect((s.reason as DomainError).code).toBe('version_conflict');
          }
        }
        const winner = won[0]!;
        expect(await store.loadAgent('agent-race')).toEqual({ version: 2, doc: { winner }, last_event_seq: 2 });
        const page = await store.readEvents('agent-race', { limit: 10, order: 'asc' });
        expect(page.events.map((e) => e.payload['tag'])).toEqual([`w${winner}`, `w${winner}`]);
      });

      it('lets exactly one of several concurrent creates win', async () => {
        const settled = await Promise.allSettled(
          [0, 1, 2].map((i) => store.commit(commitOf(lease, 'agent-born', null, { by: i }))),
        );
        expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
        expect((await store.loadAgent('agent-born'))?.version).toBe(1);
      });

      it('lands concurrent commits with chained versions in order', async () => {
        const results = await Promise.all(
          [null, 1, 2, 3, 4, 5].map((expected, i) =>
            store.commit(commitOf(lease, 'agent-chain', expected, { step: i }, newEvents(i + 1, `s${i}`))),
          ),
        );
        expect(results.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6]);
        const firstSeqs = results.map((r) => r.events[0]?.event_seq);
        expect(firstSeqs).toEqual([1, 2, 4, 7, 11, 16]);
        expect(await store.loadAgent('agent-chain')).toEqual({ version: 6, doc: { step: 5 }, last_event_seq: 21 });
        const page = await store.readEvents('agent-chain', { limit: 100, order: 'asc' });
        expect(page.events.map((e) => e.event_seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
        expect(page.events.map((e) => e.payload['tag'])).toEqual(
          results.flatMap((r) => r.events.map((e) => e.payload['tag'])),
        );
      });

      it('commits to different agents concurrently without interference', async () => {
        const ids = ['agent-m0', 'agent-m1', 'agent-m2', 'agent-m3'];
        await Promise.all(ids.map((id) => store.commit(commitOf(lease, id, null, { id }, newEvents(3)))));
        await Promise.all(ids.map((id) => store.commit(commitOf(lease, id, 1, { id, again: true }, newEvents(1)))));
        for (const id of ids) {
          expect(await store.loadAgent(id)).toEqual({ version: 2, doc: { id, again: true }, last_event_seq: 4 });
        }
        expect(await store.listAgentIds()).toEqual(ids);
      });
    });

    describe('lease', () => {
      it('reads no lease on a new store, then the acquired one', async () => {
        const fresh = await makeStore();
        await fresh.open();
        try {
          expect(await fresh.readLease()).toBeNull();
          const taken = await fresh.acquireLease('solo', 1_000, T0);
          expect(taken).toEqual({
            holder: 'solo',
            fencing_token: 1,
            acquired_at: T0.toISOString(),
            expires_at: at(1_000).toISOString(),
          });
          expect(await fresh.readLease()).toEqual(taken);
        } finally {
          await fresh.close();
        }
      });

      it('refuses another holder while the lease is live and hands it over once expired', async () => {
        const error = await rejection(store.acquireLease('holder-b', TTL_MS, at(TTL_MS - 1)), 'lease_lost');
        expect(error.details).toMatchObject({ holder: 'holder-a' });

        const taken = await store.acquireLease('holder-b', TTL_MS, at(TTL_MS));
        expect(taken.holder).toBe('holder-b');
        expect(taken.fencing_token).toBe(lease.fencing_token + 1);
        expect(taken.expires_at).toBe(at(2 * TTL_MS).toISOString());
        expect(await store.readLease()).toEqual(taken);

        const back = await store.acquireLease('holder-a', TTL_MS, at(3 * TTL_MS));
        expect(back.fencing_token).toBe(lease.fencing_token + 2);
      });

      it('keeps the token when the same holder acquires again', async () => {
        const again = await store.acquireLease('holder-a', TTL_MS, at(10));
        expect(again.fencing_token).toBe(lease.fencing_token);
        expect(again.expires_at).toBe(at(10 + TTL_MS).toISOString());
      });

      it('renews a held lease and refuses renewal after a takeover', async () => {
        const renewed = await store.renewLease(lease, TTL_MS, at(1_000));
        expect(renewed).toEqual({ ...lease, expires_at: at(1_000 + TTL_MS).toISOString() });
        await rejection(store.acquireLease('holder-b', TTL_MS, at(TTL_MS)), 'lease_lost');

        await store.acquireLease('holder-b', TTL_MS, at(1_000 + TTL_MS));
        const error = await rejection(store.renewLease(renewed, TTL_MS, at(1_000 + TTL_MS)), 'lease_lost');
        expect(error.details).toMatchObject({ current_fencing_token: lease.fencing_token + 1 });
      });

      it('releases a lease so another holder can take it at once, with a higher token', async () => {
        await store.releaseLease(lease);
        const taken = await store.acquireLease('holder-b', TTL_MS, at(1));
        expect(taken.fencing_token).toBe(lease.fencing_token + 1);
        // Releasing a lease that was taken over changes nothing.
        await store.releaseLease(lease);
        expect(await store.readLease()).toEqual(taken);
      });

      it('refuses nonsensical ttl values', async () => {
        await rejection(store.acquireLease('holder-a', 0, T0), 'invalid_request');
        await rejection(store.renewLease(lease, -5, T0), 'invalid_request');
      });
    });

    describe('fencing', () => {
      it('refuses a commit with a stale fencing token and writes nothing', async () => {
        await store.commit(commitOf(lease, 'agent-f', null, { v: 1 }, newEvents(1)));
        const taken = await store.acquireLease('holder-b', TTL_MS, at(TTL_MS + 1));

        await rejection(store.commit(commitOf(lease, 'agent-f', 1, { v: 'fenced' }, newEvents(2))), 'lease_lost');
        await rejection(store.commit(commitOf(lease, 'agent-new', null, {}, newEvents(2))), 'lease_lost');
        expect(await store.loadAgent('agent-f')).toEqual({ version: 1, doc: { v: 1 }, last_event_seq: 1 });
        expect(await store.loadAgent('agent-new')).toBeNull();
        expect(await store.listAgentIds()).toEqual(['agent-f']);
        expect((await store.readEvents('agent-f', { limit: 10, order: 'asc' })).newest_seq).toBe(1);

        const ok = await store.commit(commitOf(taken, 'agent-f', 1, { v: 2 }, newEvents(1)));
        expect(ok.events[0]?.event_seq).toBe(2);
      });

      it('refuses a token that was never issued', async () => {
        await rejection(
          store.commit({ agent_id: 'agent-t', expected_version: null, doc: {}, events: [], fencing_token: lease.fencing_token + 1 }),
          'lease_lost',
        );
        expect(await store.loadAgent('agent-t')).toBeNull();
      });

      it('refuses commits on a store where no lease was ever acquired', async () => {
        const fresh = await makeStore();
        await fresh.open();
        try {
          await rejection(
            fresh.commit({ agent_id: 'agent-z', expected_version: null, doc: {}, events: [], fencing_token: 1 }),
            'lease_lost',
          );
          await rejection(fresh.putGlobal('k', 1, 1), 'lease_lost');
        } finally {
          await fresh.close();
        }
      });

      it('fences only the stale commit among concurrent ones', async () => {
        await store.commit(commitOf(lease, 'agent-g', null, {}));
        const taken = await store.acquireLease('holder-b', TTL_MS, at(TTL_MS + 1));
        const [stale, fresh] = await Promise.allSettled([
          store.commit(commitOf(lease, 'agent-g', 1, { by: 'a' })),
          store.commit(commitOf(taken, 'agent-g', 1, { by: 'b' })),
        ]);
        expect(stale.status).toBe('rejected');
        expect(fresh.status).toBe('fulfilled');
        expect((await store.loadAgent('agent-g'))?.doc).toEqual({ by: 'b' });
      });
    });

    describe('global space', () => {
      it('stores, overwrites and deletes values', async () => {
        expect(await store.getGlobal('idem:1')).toBeUndefined();
        await store.putGlobal('idem:1', { agent_id: 'a', n: [1] }, lease.fencing_token);
        expect(await store.getGlobal('idem:1')).toEqual({ agent_id: 'a', n: [1] });
        await store.putGlobal('idem:1', 'second', lease.fencing_token);
        expect(await store.getGlobal('idem:1')).toBe('second');
        await store.putGlobal('idem:1', undefined, lease.fencing_token);
        expect(await store.getGlobal('idem:1')).toBeUndefined();
        expect(await store.getGlobal('constructor')).toBeUndefined();
      });

      it('keeps concurrent puts to different keys', async () => {
        await Promise.all(['a', 'b', 'c'].map((key, i) => store.putGlobal(key, i, lease.fencing_token)));
        expect([await store.getGlobal('a'), await store.getGlobal('b'), await store.getGlobal('c')]).toEqual([0, 1, 2]);
      });

      it('returns and stores copies', async () => {
        const value = { list: [1] };
        await store.putGlobal('k', value, lease.fencing_token);
        value.list.push(2);
        const read = (await store.getGlobal('k')) as { list: number[] };
        expect(read).toEqual({ list: [1] });
        read.list.push(3);
        expect(await store.getGlobal('k')).toEqual({ list: [1] });
      });

      it('refuses a put with a stale fencing token and keeps the old value', async () => {
        await store.putGlobal('k', 'kept', lease.fencing_token);
        await store.acquireLease('holder-b', TTL_MS, at(TTL_MS + 1));
        await rejection(store.putGlobal('k', 'fenced', lease.fencing_token), 'lease_lost');
        expect(await store.getGlobal('k')).toBe('kept');
      });
    });

    describe('roster', () => {
      it('lists the latest roster entry of every agent with its version, sorted by id, without documents', async () => {
        await store.commit({ ...commitOf(lease, 'agent-b', null, { big: 'doc' }), roster: { phase: 'active' } });
        await store.commit(commitOf(lease, 'agent-a', null, { n: 1 }));
        await store.commit({ ...commitOf(lease, 'agent-b', 1, { big: 'doc2' }), roster: { phase: 'sleeping' } });
        expect(await store.listRoster()).toEqual([
          { agent_id: 'agent-a', version: 1, roster: null },
          { agent_id: 'agent-b', version: 2, roster: { phase: 'sleeping' } },
        ]);
      });

      it('keeps the previous entry when a commit carries none', async () => {
        await store.commit({ ...commitOf(lease, 'agent-1', null, {}), roster: { phase: 'active' } });
        await store.commit(commitOf(lease, 'agent-1', 1, { changed: true }));
        expect(await store.listRoster()).toEqual([{ agent_id: 'agent-1', version: 2, roster: { phase: 'active' } }]);
      });

      it('writes nothing of a refused commit, roster included', async () => {
        await store.commit({ ...commitOf(lease, 'agent-1', null, {}), roster: { phase: 'active' } });
        await rejection(store.commit({ ...commitOf(lease, 'agent-1', 7, {}), roster: { phase: 'stale' } }), 'version_conflict');
        expect(await store.listRoster()).toEqual([{ agent_id: 'agent-1', version: 1, roster: { phase: 'active' } }]);
      });

      it('survives close and reopen', async () => {
        await store.commit({ ...commitOf(lease, 'agent-1', null, {}), roster: { token_hashes: ['h1'] } });
        await store.close();
        await store.open();
        expect(await store.listRoster()).toEqual([{ agent_id: 'agent-1', version: 1, roster: { token_hashes: ['h1'] } }]);
      });

      it('hands out copies: mutating a listed entry changes nothing stored', async () => {
        await store.commit({ ...commitOf(lease, 'agent-1', null, {}), roster: { phase: 'active' } });
        const [entry] = await store.listRoster();
        (entry?.roster as { phase: string }).phase = 'mutated';
        expect((await store.listRoster())[0]?.roster).toEqual({ phase: 'active' });
      });
    });

    describe('eviction', () => {
      it('an evicted agent reads back exactly as committed, and commits continue from its version', async () => {
        await store.commit(commitOf(lease, 'agent-1', null, { n: 1 }, newEvents(2)));
        store.evictAgent('agent-1');
        expect(await store.loadAgent('agent-1')).toEqual({ version: 1, doc: { n: 1 }, last_event_seq: 2 });
        const next = await store.commit(commitOf(lease, 'agent-1', 1, { n: 2 }, newEvents(1)));
        expect(next.events.map((e) => e.event_seq)).toEqual([3]);
        store.evictAgent('agent-1');
        const page = await store.readEvents('agent-1', { limit: 10, order: 'asc' });
        expect(page.events.map((e) => e.event_seq)).toEqual([1, 2, 3]);
      });

      it('evicting an agent with a commit in flight loses nothing', async () => {
        await store.commit(commitOf(lease, 'agent-1', null, { n: 1 }));
        const pending = store.commit(commitOf(lease, 'agent-1', 1, { n: 2 }, newEvents(1)));
        store.evictAgent('agent-1');
        expect((await pending).version).toBe(2);
        expect(await store.loadAgent('agent-1')).toEqual({ version: 2, doc: { n: 2 }, last_event_seq: 1 });
      });

      it('refuses an invalid agent id', () => {
        expect(() => store.evictAgent('../etc')).toThrow(DomainError);
      });
    });

    describe('open and close', () => {
      it('refuses to work when closed', async () => {
        const closed = await makeStore();
        await rejection(closed.loadAgent('a'), 'store_unavailable');
        await closed.open();
        await closed.close();
        await rejection(closed.commit(commitOf(lease, 'a', null, {})), 'store_unavailable');
        await rejection(closed.readLease(), 'store_unavailable');
      });

      it('finishes commits issued before close', async () => {
        const pending = store.commit(commitOf(lease, 'agent-late', null, { ok: true }, newEvents(1)));
        await store.close();
        expect((await pending).version).toBe(1);
        await store.open();
        expect(await store.loadAgent('agent-late')).toEqual({ version: 1, doc: { ok: true }, last_event_seq: 1 });
      });
    });
  });
}
