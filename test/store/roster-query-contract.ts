import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/domain/index.js';
import type { Lease, Store } from '../../src/store/index.js';

export interface RosterQueryContext {
  store(): Store;
  lease(): Lease;
  rejection(promise: Promise<unknown>, code: ErrorCode): Promise<unknown>;
}

/** `listRosterPage` and `agentForTriggerHash`: the roster read without a resident copy (src/store/README.md). */
export function rosterQueryContract(ctx: RosterQueryContext): void {
  const create = (agent_id: string, roster?: unknown) =>
    ctx.store().commit({ agent_id, expected_version: null, doc: { agent_id }, events: [], fencing_token: ctx.lease().fencing_token, ...(roster === undefined ? {} : { roster }) });
  const ids = (page: { entries: Array<{ agent_id: string }> }) => page.entries.map((e) => e.agent_id);

  describe('roster pages', () => {
    it('pages in id order from a cursor, saying whether more follow', async () => {
      for (const id of ['agent-c', 'agent-a', 'agent-e', 'agent-b', 'agent-d']) await create(id, { listing: { status: 'sleeping' } });
      const first = await ctx.store().listRosterPage({ limit: 2 });
      expect(ids(first)).toEqual(['agent-a', 'agent-b']);
      expect(first.more).toBe(true);
      expect(first.entries[0]).toEqual({ agent_id: 'agent-a', version: 1, roster: { listing: { status: 'sleeping' } } });
      const second = await ctx.store().listRosterPage({ after: 'agent-b', limit: 2 });
      expect(ids(second)).toEqual(['agent-c', 'agent-d']);
      const last = await ctx.store().listRosterPage({ after: 'agent-d', limit: 2 });
      expect(ids(last)).toEqual(['agent-e']);
      expect(last.more).toBe(false);
      expect(await ctx.store().listRosterPage({ after: 'agent-e', limit: 2 })).toEqual({ entries: [], more: false });
    });

    it('filters by id substring in any case and by roster text, and gives an entry without a roster as null', async () => {
      await create('Alpha-1', { listing: { status: 'sleeping' } });
      await create('beta-1', { listing: { status: 'running' } });
      await create('alpha-2', { listing: { status: 'running' } });
      await create('ALPHA-3');
      expect(ids(await ctx.store().listRosterPage({ limit: 10, id_contains: 'aLPha' }))).toEqual(['ALPHA-3', 'Alpha-1', 'alpha-2']);
      expect(ids(await ctx.store().listRosterPage({ limit: 10, roster_contains: '"status":"running"' }))).toEqual(['alpha-2', 'beta-1']);
      const both = await ctx.store().listRosterPage({ limit: 1, id_contains: 'alpha', roster_contains: '"running"' });
      expect(both).toEqual({ entries: [{ agent_id: 'alpha-2', version: 1, roster: { listing: { status: 'running' } } }], more: false });
      expect((await ctx.store().listRosterPage({ limit: 1, id_contains: 'alpha-3' })).entries).toEqual([{ agent_id: 'ALPHA-3', version: 1, roster: null }]);
    });

    it('reads the latest entry after commits, and refuses a limit below 1', async () => {
      await create('agent-1', { listing: { status: 'running' } });
      await ctx.store().commit({ agent_id: 'agent-1', expected_version: 1, doc: {}, events: [], fencing_token: ctx.lease().fencing_token, roster: { listing: { status: 'sleeping' } } });
      expect((await ctx.store().listRosterPage({ limit: 5 })).entries).toEqual([{ agent_id: 'agent-1', version: 2, roster: { listing: { status: 'sleeping' } } }]);
      expect(ids(await ctx.store().listRosterPage({ limit: 5, roster_contains: 'running' }))).toEqual([]);
      await ctx.rejection(ctx.store().listRosterPage({ limit: 0 }), 'invalid_request');
    });
  });

  describe('capability lookup by trigger hash', () => {
    it("finds the agent whose latest entry lists the hash, and no longer once a commit drops it", async () => {
      await create('agent-1', { listing: {}, trigger_hashes: ['hA', 'hB-_9'] });
      await create('agent-2', { listing: {}, trigger_hashes: [] });
      await create('agent-3');
      expect(await ctx.store().agentForTriggerHash('hB-_9')).toBe('agent-1');
      expect(await ctx.store().agentForTriggerHash('hA')).toBe('agent-1');
      expect(await ctx.store().agentForTriggerHash('h')).toBeNull();
      expect(await ctx.store().agentForTriggerHash('hB')).toBeNull();
      await ctx.store().commit({ agent_id: 'agent-1', expected_version: 1, doc: {}, events: [], fencing_token: ctx.lease().fencing_token, roster: { listing: {}, trigger_hashes: ['hB-_9'] } });
      await ctx.store().commit({ agent_id: 'agent-2', expected_version: 1, doc: {}, events: [], fencing_token: ctx.lease().fencing_token, roster: { listing: {}, trigger_hashes: ['hA'] } });
      expect(await ctx.store().agentForTriggerHash('hA')).toBe('agent-2');
      expect(await ctx.store().agentForTriggerHash('hB-_9')).toBe('agent-1');
    });

    it('is not fooled by the key inside a string of the entry', async () => {
      await create('agent-1', { listing: { waiting_reason: '"trigger_hashes":["hX"]' }, trigger_hashes: ['hY'] });
      expect(await ctx.store().agentForTriggerHash('hX')).toBeNull();
      expect(await ctx.store().agentForTriggerHash('hY')).toBe('agent-1');
    });
  });
}
