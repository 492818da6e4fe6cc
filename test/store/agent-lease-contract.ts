import { describe, expect, it } from 'vitest';
import type { AgentLease, Lease, Store } from '../../src/store/index.js';

/**
 * How a store keeps agent leases (src/store/README.md):
 * - `per-agent` (PostgreSQL): one row per agent, expiry on the database's clock, any number of holders.
 * - `store-lease` (memory, lowdb): an agent lease rides on the store-wide lease; its holder writes every agent.
 */
export type AgentLeaseMode = 'per-agent' | 'store-lease';

export interface AgentLeaseContext {
  store: () => Store;
  /** The store lease `holder-a` holds (taken in the suite's beforeEach). */
  lease: () => Lease;
  ttl: number;
  rejection: (promise: Promise<unknown>, code: 'lease_lost' | 'invalid_request' | 'version_conflict') => Promise<{ details: Record<string, unknown> | undefined }>;
  at: (ms: number) => Date;
}

function agentCommit(agent_id: string, expected_version: number | null, agent_fencing_token: number, doc: unknown) {
  return {
    agent_id,
    expected_version,
    doc,
    events: [{ type: 'transition_committed' as const, payload: { doc }, ts: new Date(0).toISOString() }],
    agent_fencing_token,
  };
}

/** The agent lease part of the Store contract; `mode` selects how a second holder gets an agent. */
export function agentLeaseContract(mode: AgentLeaseMode, ctx: AgentLeaseContext): void {
  const { ttl, rejection } = ctx;

  /** Makes `holder-b` the agent's writer the way the store allows it. */
  async function handOver(from: AgentLease): Promise<AgentLease> {
    const store = ctx.store();
    if (mode === 'per-agent') {
      await store.releaseAgentLease(from);
    } else {
      await store.releaseLease(ctx.lease());
      await store.acquireLease('holder-b', ttl, ctx.at(1));
    }
    return store.acquireAgentLease(from.agent_id, 'holder-b', ttl);
  }

  describe(`agent leases (${mode})`, () => {
    it('grants a lease naming the holder and agent, which reads back live; the same holder keeps its token', async () => {
      const store = ctx.store();
      const lease = await store.acquireAgentLease('agent-l', 'holder-a', ttl);
      expect(lease).toMatchObject({ agent_id: 'agent-l', holder: 'holder-a' });
      expect(lease.fencing_token).toBeGreaterThanOrEqual(1);
      expect(Date.parse(lease.expires_at)).toBeGreaterThan(Date.parse(lease.acquired_at));
      expect(await store.readAgentLease('agent-l')).toEqual({ ...lease, live: true });
      const again = await store.acquireAgentLease('agent-l', 'holder-a', ttl);
      expect(again.fencing_token).toBe(lease.fencing_token);
    });

    it('accepts commits fenced by the current agent token and refuses others, writing nothing', async () => {
      const store = ctx.store();
      const lease = await store.acquireAgentLease('agent-f', 'holder-a', ttl);
      expect((await store.commit(agentCommit('agent-f', null, lease.fencing_token, { v: 1 }))).version).toBe(1);
      await rejection(store.commit(agentCommit('agent-f', 1, lease.fencing_token + 1, { v: 'never issued' })), 'lease_lost');
      await rejection(store.commit(agentCommit('agent-new', null, lease.fencing_token + 1, {})), 'lease_lost');
      expect(await store.loadAgent('agent-f')).toEqual({ version: 1, doc: { v: 1 }, last_event_seq: 1 });
      expect(await store.loadAgent('agent-new')).toBeNull();
    });

    it('writes a global record once, fenced by the agent lease: the first value stays, a stale token writes nothing', async () => {
      const store = ctx.store();
      const lease = await store.acquireAgentLease('agent-k', 'holder-a', ttl);
      const fence = { agent_id: 'agent-k', agent_fencing_token: lease.fencing_token };
      expect(await store.putGlobalOnce('create:k1', { agent_id: 'agent-k', n: 1 }, fence)).toEqual({ agent_id: 'agent-k', n: 1 });
      expect(await store.putGlobalOnce('create:k1', { agent_id: 'agent-other', n: 2 }, fence)).toEqual({ agent_id: 'agent-k', n: 1 });
      expect(await store.getGlobal('create:k1')).toEqual({ agent_id: 'agent-k', n: 1 });
      await rejection(store.putGlobalOnce('create:k2', { agent_id: 'agent-k' }, { agent_id: 'agent-k', agent_fencing_token: lease.fencing_token + 1 }), 'lease_lost');
      expect(await store.getGlobal('create:k2')).toBeUndefined();
    });

    it('refuses a commit carrying both fences or neither', async () => {
      const store = ctx.store();
      const lease = await store.acquireAgentLease('agent-b', 'holder-a', ttl);
      const both = { ...agentCommit('agent-b', null, lease.fencing_token, {}), fencing_token: ctx.lease().fencing_token };
      await rejection(store.commit(both as never), 'invalid_request');
      const { agent_fencing_token: _dropped, ...neither } = agentCommit('agent-b', null, lease.fencing_token, {});
      await rejection(store.commit(neither as never), 'invalid_request');
      expect(await store.loadAgent('agent-b')).toBeNull();
    });

    it('hands an agent to another holder with a higher token; the old token can no longer write', async () => {
      const store = ctx.store();
      const first = await store.acquireAgentLease('agent-h', 'holder-a', ttl);
      await store.commit(agentCommit('agent-h', null, first.fencing_token, { by: 'a' }));
      const taken = await handOver(first);
      expect(taken.holder).toBe('holder-b');
      expect(taken.fencing_token).toBeGreaterThan(first.fencing_token);

      const refused = await rejection(store.commit(agentCommit('agent-h', 1, first.fencing_token, { by: 'a, fenced' })), 'lease_lost');
      expect(refused.details).toMatchObject({ fencing_token: first.fencing_token, current_fencing_token: taken.fencing_token });
      expect((await store.commit(agentCommit('agent-h', 1, taken.fencing_token, { by: 'b' }))).version).toBe(2);
      expect(await store.loadAgent('agent-h')).toEqual({ version: 2, doc: { by: 'b' }, last_event_seq: 2 });
      expect((await store.renewAgentLeases('holder-a', [first], ttl)).lost).toEqual(['agent-h']);
      // Releasing a lease another holder took changes nothing.
      await store.releaseAgentLease(first);
      expect(await store.readAgentLease('agent-h')).toMatchObject({ holder: 'holder-b', fencing_token: taken.fencing_token, live: true });
    });

    it('refuses another holder while the lease is held, naming the holder', async () => {
      const store = ctx.store();
      await store.acquireAgentLease('agent-x', 'holder-a', ttl);
      const refused = await rejection(store.acquireAgentLease('agent-x', 'holder-b', ttl), 'lease_lost');
      expect(refused.details).toMatchObject({ holder: 'holder-a' });
      expect(await store.readAgentLease('agent-x')).toMatchObject({ holder: 'holder-a' });
    });

    it('renews many leases in one call and reports the ones it no longer holds', async () => {
      const store = ctx.store();
      const held = await Promise.all(['agent-r1', 'agent-r2', 'agent-r3'].map((id) => store.acquireAgentLease(id, 'holder-a', ttl)));
      const bogus = { agent_id: 'agent-r4', fencing_token: 999 };
      const result = await store.renewAgentLeases('holder-a', [...held, bogus], ttl);
      expect(result.lost).toEqual(['agent-r4']);
      expect(result.renewed.map((l) => [l.agent_id, l.holder, l.fencing_token]).sort()).toEqual(
        held.map((l) => [l.agent_id, 'holder-a', l.fencing_token]).sort(),
      );
      for (const lease of result.renewed) expect(Date.parse(lease.expires_at)).toBeGreaterThanOrEqual(Date.parse(held[0]!.acquired_at));
      expect((await store.renewAgentLeases('holder-b', held, ttl)).lost.sort()).toEqual(['agent-r1', 'agent-r2', 'agent-r3']);
      expect(await store.renewAgentLeases('holder-a', [], ttl)).toEqual({ renewed: [], lost: [] });
    });

    it('refuses nonsensical input', async () => {
      const store = ctx.store();
      await rejection(store.acquireAgentLease('agent-1', 'holder-a', 0), 'invalid_request');
      await rejection(store.acquireAgentLease('agent-1', '', ttl), 'invalid_request');
      await rejection(store.acquireAgentLease('../x', 'holder-a', ttl), 'invalid_request');
      await rejection(store.renewAgentLeases('holder-a', [], -1), 'invalid_request');
      await rejection(store.readAgentLease('a/b'), 'invalid_request');
    });

    if (mode === 'store-lease') {
      it('grants agents only to the holder of the store lease, and a store takeover fences every agent token', async () => {
        const store = ctx.store();
        await rejection(store.acquireAgentLease('agent-e', 'holder-b', ttl), 'lease_lost');
        const lease = await store.acquireAgentLease('agent-e', 'holder-a', ttl);
        expect(lease.fencing_token).toBe(ctx.lease().fencing_token);
        await store.acquireLease('holder-b', ttl, ctx.at(ttl + 1));
        await rejection(store.commit(agentCommit('agent-e', null, lease.fencing_token, {})), 'lease_lost');
        expect(await store.loadAgent('agent-e')).toBeNull();
      });
    }

    if (mode === 'per-agent') {
      it('lets another holder take an expired lease, on the store clock, with a higher token', async () => {
        const store = ctx.store();
        const short = await store.acquireAgentLease('agent-t', 'holder-a', 150);
        await rejection(store.acquireAgentLease('agent-t', 'holder-b', ttl), 'lease_lost');
        let taken: AgentLease | null = null;
        for (let tries = 0; taken === null && tries < 100; tries += 1) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          taken = await store.acquireAgentLease('agent-t', 'holder-b', ttl).catch(() => null);
        }
        expect(taken).toMatchObject({ holder: 'holder-b', fencing_token: short.fencing_token + 1 });
        expect(Date.parse(taken!.acquired_at)).toBeGreaterThanOrEqual(Date.parse(short.expires_at));
      });

      it('reads an expired or released lease as not live', async () => {
        const store = ctx.store();
        const lease = await store.acquireAgentLease('agent-d', 'holder-a', ttl);
        await store.releaseAgentLease(lease);
        expect(await store.readAgentLease('agent-d')).toMatchObject({ holder: 'holder-a', fencing_token: lease.fencing_token, live: false });
        expect(await store.readAgentLease('agent-none')).toBeNull();
        // The same holder takes it back with its token; another would get a higher one.
        expect((await store.acquireAgentLease('agent-d', 'holder-a', ttl)).fencing_token).toBe(lease.fencing_token);
      });

      it('keeps each agent its own holder and token, independent of the store lease', async () => {
        const store = ctx.store();
        const a = await store.acquireAgentLease('agent-1', 'holder-a', ttl);
        const b = await store.acquireAgentLease('agent-2', 'holder-b', ttl);
        // holder-b holds no store lease, yet writes its own agent.
        expect((await store.commit(agentCommit('agent-2', null, b.fencing_token, { by: 'b' }))).version).toBe(1);
        await rejection(store.commit(agentCommit('agent-1', null, b.fencing_token + 5, {})), 'lease_lost');
        expect((await store.commit(agentCommit('agent-1', null, a.fencing_token, { by: 'a' }))).version).toBe(1);
        expect((await store.renewAgentLeases('holder-a', [a, b], ttl)).lost).toEqual(['agent-2']);
      });

      it('gives a free agent to exactly one of several concurrent holders', async () => {
        const store = ctx.store();
        const settled = await Promise.allSettled(['n1', 'n2', 'n3', 'n4'].map((holder) => store.acquireAgentLease('agent-c', holder, ttl)));
        const won = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
        expect(won).toHaveLength(1);
        expect(await store.readAgentLease('agent-c')).toMatchObject({ holder: won[0]!.holder, fencing_token: won[0]!.fencing_token });
      });

      it('fences a batch of commits per agent: a lost agent fails alone, the others land', async () => {
        const store = ctx.store();
        const a = await store.acquireAgentLease('agent-p', 'holder-a', ttl);
        const q = await store.acquireAgentLease('agent-q', 'holder-a', ttl);
        await store.releaseAgentLease(q);
        const taken = await store.acquireAgentLease('agent-q', 'holder-b', ttl);
        const [p, stale, fresh] = await Promise.allSettled([
          store.commit(agentCommit('agent-p', null, a.fencing_token, {})),
          store.commit(agentCommit('agent-q', null, q.fencing_token, { by: 'a' })),
          store.commit(agentCommit('agent-q', null, taken.fencing_token, { by: 'b' })),
        ]);
        expect([p.status, stale.status, fresh.status]).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect((await store.loadAgent('agent-q'))?.doc).toEqual({ by: 'b' });
      });
    }
  });
}
