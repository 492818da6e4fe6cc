import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LowdbStore } from '../../src/store/index.js';
import { at, commitOf, newEvents, rejection, T0 } from './contract.js';
import { TempDirs } from './temp-dirs.js';
import { StoreWorker } from './worker-client.js';

const dirs = new TempDirs();
const workers: StoreWorker[] = [];
const stores: LowdbStore[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});
afterAll(() => dirs.cleanup());

function startWorker(dataDir: string, mode: 'exclusive' | 'shared', checkpointBytes?: number): StoreWorker {
  const worker = StoreWorker.start(dataDir, mode, checkpointBytes);
  workers.push(worker);
  return worker;
}

async function openStore(dataDir: string, exclusiveProcessLock: boolean): Promise<LowdbStore> {
  const store = new LowdbStore({ dataDir, exclusiveProcessLock });
  await store.open();
  stores.push(store);
  return store;
}

describe('lowdb store with a real writer process', () => {
  it('reopens cleanly with only whole commits after the writer is SIGKILLed mid-commit', async () => {
    const dataDir = await dirs.make();
    const EVENTS_PER_COMMIT = 7;
    const agents = ['agent-a', 'agent-b', 'agent-c'];
    const acknowledged = new Map<string, number>();
    // Three writers in turn, each killed mid-flight; each resumes from what the last one left.
    const ROUNDS = 3;
    for (let round = 0; round < ROUNDS; round += 1) {
      const worker = startWorker(dataDir, 'exclusive');
      await worker.ok('open');
      await worker.ok('acquire', { holder: `child-${round}`, ttl_ms: 1_000, now: at(round * 10_000).toISOString() });
      await worker.ok('loop', { agents, events: EVENTS_PER_COMMIT });
      // Enough commits that the logs cross a segment boundary (1,000 events) along the way.
      await worker.commitsReached(250);
      await worker.kill();
      for (const [agent, version] of worker.acknowledged) acknowledged.set(agent, version);
    }

    // The dead child's writer.lock is taken over; its expired lease is taken with a newer token.
    const store = await openStore(dataDir, true);
    const lease = await store.acquireLease('parent', 1_000, at(ROUNDS * 10_000));
    expect(lease.fencing_token).toBe(ROUNDS + 1);
    expect(await store.listAgentIds()).toEqual(agents);

    for (const agent of agents) {
      const stored = await store.loadAgent(agent);
      expect(stored).not.toBeNull();
      const version = stored!.version;
      // Every acknowledged commit survived; at most the commits in flight at the kill landed on top.
      expect(version).toBeGreaterThanOrEqual(acknowledged.get(agent) ?? 0);
      expect(stored!.doc).toEqual({ n: version });
      expect(stored!.last_event_seq).toBe(version * EVENTS_PER_COMMIT);

      const page = await store.readEvents(agent, { limit: 100_000, order: 'asc' });
      expect(page.newest_seq).toBe(version * EVENTS_PER_COMMIT);
      expect(page.events.map((e) => e.event_seq)).toEqual(
        Array.from({ length: version * EVENTS_PER_COMMIT }, (_, i) => i + 1),
      );
      expect(page.events.map((e) => e.payload['commit'])).toEqual(
        Array.from({ length: version * EVENTS_PER_COMMIT }, (_, i) => Math.floor(i / EVENTS_PER_COMMIT) + 1),
      );

      // The files hold exactly the acknowledged events, with no torn or extra tail.
      const eventsDir = join(dataDir, 'agents', agent, 'events');
      let lines = 0;
      for (const name of await readdir(eventsDir)) {
        const text = await readFile(join(eventsDir, name), 'utf8');
        expect(text.endsWith('\n')).toBe(true);
        lines += text.split('\n').length - 1;
      }
      expect(lines).toBe(version * EVENTS_PER_COMMIT);

      const next = await store.commit(commitOf(lease, agent, version, { n: version + 1 }, newEvents(1)));
      expect(next.events[0]?.event_seq).toBe(version * EVENTS_PER_COMMIT + 1);
    }
  });

  it('keeps the roster equal to the acknowledged commits across SIGKILLs that land mid-stream and mid-checkpoint', async () => {
    const dataDir = await dirs.make();
    const agents = ['agent-a', 'agent-b', 'agent-c', 'agent-d'];
    const acknowledged = new Map<string, number>();
    for (let round = 0; round < 4; round += 1) {
      // 64 KiB of log per checkpoint: rounds start every few dozen commits, so kills land inside them too.
      const worker = startWorker(dataDir, 'exclusive', 64 * 1024);
      await worker.ok('open');
      await worker.ok('acquire', { holder: `child-${round}`, ttl_ms: 1_000, now: at(round * 10_000).toISOString() });
      await worker.ok('loop', { agents, events: 40 });
      await worker.commitsReached(150 + round * 37);
      await worker.kill();
      for (const [agent, version] of worker.acknowledged) acknowledged.set(agent, version);

      const store = await openStore(dataDir, true);
      const roster = await store.listRoster();
      expect(roster.map((e) => e.agent_id)).toEqual(agents);
      for (const entry of roster) {
        // Every acknowledged commit is listed; at most the ones in flight at the kill landed on top.
        expect(entry.version).toBeGreaterThanOrEqual(acknowledged.get(entry.agent_id) ?? 1);
        expect(entry.roster).toEqual({ n: entry.version });
        const stored = await store.loadAgent(entry.agent_id);
        expect(stored).toEqual({ version: entry.version, doc: { n: entry.version }, last_event_seq: entry.version * 40 });
        const page = await store.readEvents(entry.agent_id, { before_seq: entry.version * 40 + 1, limit: 1, order: 'desc' });
        expect(page.events[0]?.payload).toEqual({ commit: entry.version, k: 39 });
      }
      // The next writer continues from what this one recovered.
      await store.close();
      stores.splice(stores.indexOf(store), 1);
      for (const entry of roster) acknowledged.set(entry.agent_id, entry.version);
    }
  });

  it('refuses the next commit of a writer that was SIGSTOPped past expiry while another took over', async () => {
    const dataDir = await dirs.make();
    const worker = startWorker(dataDir, 'shared');
    await worker.ok('open');
    const oldLease = await worker.ok('acquire', { holder: 'old', ttl_ms: 1_000, now: T0.toISOString() });
    expect(oldLease).toMatchObject({ fencing_token: 1 });
    await worker.ok('commit', { agent_id: 'agent-1', expected_version: null, events: 2 });

    worker.signal('SIGSTOP');
    const store = await openStore(dataDir, false);
    const lease = await store.acquireLease('new', 1_000, at(5_000));
    expect(lease.fencing_token).toBe(2);
    await store.commit(commitOf(lease, 'agent-1', 1, { by: 'new' }, newEvents(1)));
    worker.signal('SIGCONT');

    const commit = await worker.request('commit', { agent_id: 'agent-1', expected_version: 1, events: 3 });
    expect(commit).toMatchObject({ ok: false, code: 'lease_lost' });
    const create = await worker.request('commit', { agent_id: 'agent-2', expected_version: null, events: 1 });
    expect(create).toMatchObject({ ok: false, code: 'lease_lost' });
    expect(await worker.request('put', { agent_id: 'key' })).toMatchObject({ ok: false, code: 'lease_lost' });
    expect(await worker.request('renew', { now: at(5_001).toISOString() })).toMatchObject({ ok: false, code: 'lease_lost' });

    expect(await store.loadAgent('agent-1')).toEqual({ version: 2, doc: { by: 'new' }, last_event_seq: 3 });
    expect(await store.listAgentIds()).toEqual(['agent-1']);
    expect(await store.getGlobal('key')).toBeUndefined();
    const fresh = await openStore(dataDir, false);
    expect((await fresh.readEvents('agent-1', { limit: 10, order: 'asc' })).newest_seq).toBe(3);
    await rejection(fresh.acquireLease('old', 1_000, at(5_500)), 'lease_lost');
  });
});
