import { describe, expect, it } from 'vitest';
import type { AgentLease } from '../../src/store/index.js';
import type { AgentLeaseContext, AgentLeaseMode } from './agent-lease-contract.js';

/** The store clock is the real one (the database's, or this process's): times relative to now. */
const fromNow = (ms: number): string => new Date(Date.now() + ms).toISOString();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until the store's clock passes `iso` (never a bound on how long that takes). */
async function until(iso: string): Promise<void> {
  while (Date.now() <= Date.parse(iso) + 20) await sleep(25);
}

const byId = (leases: AgentLease[]): string[] => leases.map((l) => l.agent_id).sort();

/** The nodes registry and claim-due-agents part of the Store contract (src/store/README.md). */
export function clusterContract(mode: AgentLeaseMode, ctx: AgentLeaseContext): void {
  const { ttl, rejection } = ctx;

  describe(`nodes registry (${mode})`, () => {
    it('registers a node live until its expiry; a heartbeat moves the expiry and address, keeping started_at', async () => {
      const store = ctx.store();
      const first = await store.heartbeatNode('node-b', 'http://10.0.0.2:8080', ttl);
      expect(first).toMatchObject({ node_id: 'node-b', advertise_url: 'http://10.0.0.2:8080', started_at: first.heartbeat_at });
      expect(Date.parse(first.expires_at) - Date.parse(first.heartbeat_at)).toBe(ttl);
      await store.heartbeatNode('node-a', 'https://a.example/holon', ttl);
      await sleep(5);
      const again = await store.heartbeatNode('node-b', 'http://10.0.0.9:8080', ttl);
      expect(again.started_at).toBe(first.started_at);
      expect(Date.parse(again.heartbeat_at)).toBeGreaterThan(Date.parse(first.heartbeat_at));
      expect(Date.parse(again.expires_at)).toBeGreaterThan(Date.parse(first.expires_at));
      expect((await store.listLiveNodes()).map((n) => [n.node_id, n.advertise_url])).toEqual([
        ['node-a', 'https://a.example/holon'],
        ['node-b', 'http://10.0.0.9:8080'],
      ]);
      expect((await store.listLiveNodes())[1]).toEqual(again);
    });

    it('drops a node whose heartbeat expired or that was removed; one coming back starts anew', async () => {
      const store = ctx.store();
      const short = await store.heartbeatNode('node-s', 'http://127.0.0.1:1', 100);
      await store.heartbeatNode('node-r', 'http://127.0.0.1:2', ttl);
      await until(short.expires_at);
      expect((await store.listLiveNodes()).map((n) => n.node_id)).toEqual(['node-r']);
      const back = await store.heartbeatNode('node-s', 'http://127.0.0.1:1', ttl);
      expect(Date.parse(back.started_at)).toBeGreaterThan(Date.parse(short.started_at));
      await store.removeNode('node-r');
      await store.removeNode('node-never-seen');
      expect((await store.listLiveNodes()).map((n) => n.node_id)).toEqual(['node-s']);
    });

    it('refuses a bad node id, address, ttl, claim or wake time, registering nothing', async () => {
      const store = ctx.store();
      for (const url of ['ftp://x.example', 'http://user:pw@x.example', 'http://x.example/?q=1', 'http://x.example/#f', 'x.example:8080', '']) {
        await rejection(store.heartbeatNode('node-x', url, ttl), 'invalid_request');
      }
      await rejection(store.heartbeatNode('', 'http://x.example', ttl), 'invalid_request');
      await rejection(store.heartbeatNode('node-x', 'http://x.example', 0), 'invalid_request');
      await rejection(store.claimDueAgents('holder-a', ttl, 0), 'invalid_request');
      await rejection(store.claimDueAgents('', ttl, 10), 'invalid_request');
      const lease = await store.acquireAgentLease('agent-w', 'holder-a', ttl);
      await rejection(store.releaseAgentLease(lease, 'tomorrow'), 'invalid_request');
      await rejection(store.locateAgent('../x'), 'invalid_request');
      expect(await store.listLiveNodes()).toEqual([]);
      expect(await store.readAgentLease('agent-w')).toMatchObject({ holder: 'holder-a', live: true });
    });

    it("locates an agent: its live lease's holder and that node's address (null when the holder is not registered)", async () => {
      const store = ctx.store();
      const lease = await store.acquireAgentLease('agent-loc', 'holder-a', ttl);
      expect(await store.locateAgent('agent-loc')).toEqual({ agent_id: 'agent-loc', holder: 'holder-a', fencing_token: lease.fencing_token, expires_at: lease.expires_at, advertise_url: null });
      await store.heartbeatNode('holder-a', 'http://127.0.0.1:8081', ttl);
      expect(await store.locateAgent('agent-loc')).toMatchObject({ holder: 'holder-a', advertise_url: 'http://127.0.0.1:8081' });
      await store.removeNode('holder-a');
      expect(await store.locateAgent('agent-loc')).toMatchObject({ holder: 'holder-a', advertise_url: null });
    });
  });

  if (mode === 'store-lease') {
    describe('claim due agents (store-lease)', () => {
      it('claims nothing: the holder of the store lease keeps every agent, whatever its wake time', async () => {
        const store = ctx.store();
        const lease = await store.acquireAgentLease('agent-z', 'holder-a', ttl);
        await store.releaseAgentLease(lease, fromNow(-60_000));
        expect(await store.claimDueAgents('holder-a', ttl, 10)).toEqual([]);
        expect(await store.claimDueAgents('holder-b', ttl, 10)).toEqual([]);
        expect(await store.locateAgent('agent-z')).toMatchObject({ holder: 'holder-a', fencing_token: ctx.lease().fencing_token });
      });
    });
  }

  if (mode === 'per-agent') {
    describe('claim due agents (per-agent)', () => {
      it('claims released agents whose wake time has come, earliest first, and no other', async () => {
        const store = ctx.store();
        const wakes: Record<string, string | null> = {
          'agent-late': fromNow(-1_000),
          'agent-early': fromNow(-60_000),
          'agent-future': fromNow(3_600_000),
          'agent-none': null,
        };
        const leases = new Map<string, AgentLease>();
        for (const [id, wake] of Object.entries(wakes)) {
          const lease = await store.acquireAgentLease(id, 'holder-a', ttl);
          leases.set(id, lease);
          await store.releaseAgentLease(lease, wake);
        }
        await store.acquireAgentLease('agent-held', 'holder-a', ttl);
        const claimed = await store.claimDueAgents('holder-b', ttl, 10);
        expect(claimed.map((l) => l.agent_id)).toEqual(['agent-early', 'agent-late']);
        for (const lease of claimed) {
          expect(lease).toMatchObject({ holder: 'holder-b', fencing_token: leases.get(lease.agent_id)!.fencing_token + 1 });
          expect(await store.readAgentLease(lease.agent_id)).toEqual({ ...lease, live: true });
        }
        expect(await store.readAgentLease('agent-future')).toMatchObject({ holder: 'holder-a', live: false });
        // A claim consumes the wake: released again without one, the agent is due no more.
        await store.releaseAgentLease(claimed[0]!);
        expect(await store.claimDueAgents('holder-c', ttl, 10)).toEqual([]);
      });

      it('takes over a lease that expired without a release (its holder stopped renewing); the old token is fenced', async () => {
        const store = ctx.store();
        const stalled = await store.acquireAgentLease('agent-o', 'holder-a', 150);
        await store.commit({ agent_id: 'agent-o', expected_version: null, doc: { by: 'a' }, events: [], agent_fencing_token: stalled.fencing_token });
        expect(await store.claimDueAgents('holder-b', ttl, 10)).toEqual([]);
        await until(stalled.expires_at);
        const [taken, ...rest] = await store.claimDueAgents('holder-b', ttl, 10);
        expect(rest).toEqual([]);
        expect(taken).toMatchObject({ agent_id: 'agent-o', holder: 'holder-b', fencing_token: stalled.fencing_token + 1 });
        await rejection(store.commit({ agent_id: 'agent-o', expected_version: 1, doc: { by: 'a, late' }, events: [], agent_fencing_token: stalled.fencing_token }), 'lease_lost');
        expect((await store.renewAgentLeases('holder-a', [stalled], ttl)).lost).toEqual(['agent-o']);
        expect(await store.loadAgent('agent-o')).toMatchObject({ version: 1, doc: { by: 'a' } });
      });

      it('gives each due agent to exactly one of several concurrent claimers, at most `limit` each', async () => {
        const store = ctx.store();
        const ids = Array.from({ length: 24 }, (_, i) => `agent-due-${String(i).padStart(2, '0')}`);
        for (const [i, id] of ids.entries()) {
          const lease = await store.acquireAgentLease(id, 'holder-a', ttl);
          await store.releaseAgentLease(lease, fromNow(-100_000 + i * 1_000));
        }
        const first = await store.claimDueAgents('holder-0', ttl, 4);
        expect(first.map((l) => l.agent_id)).toEqual(ids.slice(0, 4));
        const rounds = await Promise.all(['holder-1', 'holder-2', 'holder-3', 'holder-4'].map((holder) => store.claimDueAgents(holder, ttl, 8)));
        for (const round of rounds) expect(round.length).toBeLessThanOrEqual(8);
        const all = [...first, ...rounds.flat()];
        expect(byId(all)).toEqual(ids);
        for (const lease of all) expect(await store.readAgentLease(lease.agent_id)).toMatchObject({ holder: lease.holder, fencing_token: lease.fencing_token, live: true });
      });
    });
  }
}
