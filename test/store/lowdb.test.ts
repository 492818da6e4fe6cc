import { appendFile, cp, mkdir, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LowdbStore } from '../../src/store/index.js';
import { CommittedView } from '../../src/store/lowdb/read-committed.js';
import type { Lease } from '../../src/store/index.js';
import { at, commitOf, newEvents, rejection, storeContract, T0, TTL_MS } from './contract.js';
import { TempDirs } from './temp-dirs.js';

const dirs = new TempDirs();
afterAll(() => dirs.cleanup());

storeContract('lowdb', async () => new LowdbStore({ dataDir: await dirs.make() }));

describe('lowdb store on disk', () => {
  const opened: LowdbStore[] = [];

  async function openStore(dataDir: string, exclusiveProcessLock = true, checkpointBytes?: number, checkpointAgents?: number): Promise<LowdbStore> {
    const store = new LowdbStore({ dataDir, exclusiveProcessLock, ...(checkpointBytes === undefined ? {} : { checkpointBytes }), ...(checkpointAgents === undefined ? {} : { checkpointAgents }) });
    await store.open();
    opened.push(store);
    return store;
  }

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  async function lines(path: string): Promise<string[]> {
    const text = await readFile(path, 'utf8');
    return text.split('\n').filter((l) => l.length > 0);
  }

  const segment = (dataDir: string, agent: string, n: number): string =>
    join(dataDir, 'agents', agent, 'events', `${String(n).padStart(8, '0')}.jsonl`);

  it('lays out lease.json, global.json, doc.json and event segments as documented', async () => {
    const dataDir = await dirs.make();
    const store = await openStore(dataDir);
    const lease = await store.acquireLease('a', TTL_MS, T0);
    await store.commit(commitOf(lease, 'agent-1', null, { hello: 'world' }, newEvents(2)));
    await store.putGlobal('k', { v: 1 }, lease.fencing_token);
    // The agent's files are checkpoints of the write-ahead log.
    await store.checkpoint();

    expect(JSON.parse(await readFile(join(dataDir, 'lease.json'), 'utf8'))).toEqual(lease);
    expect(JSON.parse(await readFile(join(dataDir, 'global.json'), 'utf8'))).toEqual({ k: { v: 1 } });
    expect(JSON.parse(await readFile(join(dataDir, 'agents', 'agent-1', 'doc.json'), 'utf8'))).toEqual({
      version: 1,
      last_event_seq: 2,
      doc: { hello: 'world' },
    });
    const events = (await lines(segment(dataDir, 'agent-1', 0))).map((l) => JSON.parse(l));
    expect(events.map((e) => e.event_seq)).toEqual([1, 2]);
    expect(Number(await readFile(join(dataDir, 'writer.lock'), 'utf8'))).toBe(process.pid);
    // Every write went through a temp file and a rename; none is left behind.
    expect((await readdir(dataDir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect((await readdir(join(dataDir, 'agents', 'agent-1'))).sort()).toEqual(['doc.json', 'events']);
  });

  it('shows a new instance everything a closed one committed', async () => {
    const dataDir = await dirs.make();
    const first = await openStore(dataDir);
    const lease = await first.acquireLease('a', TTL_MS, T0);
    await first.commit(commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(3)));
    await first.commit(commitOf(lease, 'agent-1', 1, { v: 2 }, newEvents(2)));
    await first.commit(commitOf(lease, 'agent-2', null, { other: true }));
    await first.putGlobal('idem', { agent_id: 'agent-1' }, lease.fencing_token);
    await first.close();
    await expect(stat(join(dataDir, 'writer.lock'))).rejects.toThrow();

    const second = await openStore(dataDir);
    expect(await second.readLease()).toEqual(lease);
    expect(await second.listAgentIds()).toEqual(['agent-1', 'agent-2']);
    expect(await second.loadAgent('agent-1')).toEqual({ version: 2, doc: { v: 2 }, last_event_seq: 5 });
    expect(await second.getGlobal('idem')).toEqual({ agent_id: 'agent-1' });
    const page = await second.readEvents('agent-1', { limit: 10, order: 'asc' });
    expect(page.events.map((e) => e.event_seq)).toEqual([1, 2, 3, 4, 5]);
    const next = await second.commit(commitOf(lease, 'agent-1', 2, { v: 3 }, newEvents(1)));
    expect(next.events[0]?.event_seq).toBe(6);
  });

  it('shows a second instance what a still-open one committed (nothing waits for close)', async () => {
    const dataDir = await dirs.make();
    const writer = await openStore(dataDir, false);
    const lease = await writer.acquireLease('a', TTL_MS, T0);
    await writer.commit(commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(4)));
    const reader = await openStore(dataDir, false);
    expect(await reader.loadAgent('agent-1')).toEqual({ version: 1, doc: { v: 1 }, last_event_seq: 4 });
  });

  it('drops a torn last line and events beyond last_event_seq on reopen', async () => {
    const dataDir = await dirs.make();
    const first = await openStore(dataDir);
    const lease = await first.acquireLease('a', TTL_MS, T0);
    await first.commit(commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(3)));
    await first.close();
    const path = segment(dataDir, 'agent-1', 0);
    const committedBytes = await readFile(path);
    // A crash after appending a whole unacknowledged event and half of another.
    await appendFile(
      path,
      `${JSON.stringify({ id: 'agent-1:4', event_seq: 4, ts: T0.toISOString(), agent_id: 'agent-1', type: 'transition_committed', payload: {} })}\n{"id":"agent-1:5","event_s`,
    );

    const second = await openStore(dataDir);
    const page = await second.readEvents('agent-1', { limit: 10, order: 'asc' });
    expect(page.newest_seq).toBe(3);
    expect(page.events.map((e) => e.event_seq)).toEqual([1, 2, 3]);
    expect(await readFile(path)).toEqual(committedBytes);

    const next = await second.commit(commitOf(lease, 'agent-1', 1, { v: 2 }, newEvents(2, 'after')));
    expect(next.events.map((e) => e.event_seq)).toEqual([4, 5]);
    await second.checkpoint();
    const onDisk = (await lines(path)).map((l) => JSON.parse(l));
    expect(onDisk.map((e) => e.event_seq)).toEqual([1, 2, 3, 4, 5]);
    expect(onDisk[3].payload).toEqual({ tag: 'after', i: 0 });
  });

  it('deletes whole unacknowledged segments and a first commit that never reached doc.json', async () => {
    const dataDir = await dirs.make();
    const first = await openStore(dataDir);
    const lease = await first.acquireLease('a', TTL_MS, T0);
    await first.commit(commitOf(lease, 'agent-1', null, {}, newEvents(1000)));
    await first.close();
    const line = (seq: number, agent: string): string =>
      `${JSON.stringify({ id: `${agent}:${seq}`, event_seq: seq, ts: T0.toISOString(), agent_id: agent, type: 'transition_committed', payload: { ghost: true } })}\n`;
    await writeFile(segment(dataDir, 'agent-1', 1), line(1001, 'agent-1'));
    // An agent whose creating commit crashed between the event append and doc.json.
    await mkdir(join(dataDir, 'agents', 'orphan', 'events'), { recursive: true });
    await writeFile(segment(dataDir, 'orphan', 0), line(1, 'orphan'));

    const second = await openStore(dataDir);
    expect(await second.listAgentIds()).toEqual(['agent-1']);
    expect(await second.loadAgent('orphan')).toBeNull();
    expect((await second.readEvents('orphan', { limit: 5, order: 'asc' })).newest_seq).toBe(0);
    expect((await second.readEvents('agent-1', { limit: 5, order: 'desc' })).events.map((e) => e.event_seq)).toEqual([
      1000, 999, 998, 997, 996,
    ]);
    await expect(stat(segment(dataDir, 'agent-1', 1))).rejects.toThrow();

    const created = await second.commit(commitOf(lease, 'orphan', null, {}, newEvents(1, 'real')));
    expect(created.events[0]?.event_seq).toBe(1);
    await second.checkpoint();
    expect((await lines(segment(dataDir, 'orphan', 0))).map((l) => JSON.parse(l).payload)).toEqual([{ tag: 'real', i: 0 }]);
    const next = await second.commit(commitOf(lease, 'agent-1', 1, {}, newEvents(1, 'real')));
    expect(next.events[0]?.event_seq).toBe(1001);
    await second.checkpoint();
    expect((await lines(segment(dataDir, 'agent-1', 1))).map((l) => JSON.parse(l).payload)).toEqual([{ tag: 'real', i: 0 }]);
  });

  it('ignores and removes half-written temp files of a dead writer', async () => {
    const dataDir = await dirs.make();
    const first = await openStore(dataDir);
    const lease = await first.acquireLease('a', TTL_MS, T0);
    await first.commit(commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(1)));
    await first.putGlobal('k', 'committed', lease.fencing_token);
    await first.close();
    // pid 99999999 is above any Linux pid_max: the writer that left these is dead.
    const docTemp = join(dataDir, 'agents', 'agent-1', 'doc.json.99999999.1.tmp');
    const globalTemp = join(dataDir, 'global.json.99999999.2.tmp');
    await writeFile(docTemp, '{"version":2,"last_event_seq":1,"doc":{"v":');
    await writeFile(globalTemp, '{"k":"unfinished');

    const second = await openStore(dataDir);
    expect(await second.loadAgent('agent-1')).toEqual({ version: 1, doc: { v: 1 }, last_event_seq: 1 });
    expect(await second.getGlobal('k')).toBe('committed');
    await expect(stat(docTemp)).rejects.toThrow();
    await expect(stat(globalTemp)).rejects.toThrow();
  });

  it('refuses to open over a damaged doc.json instead of guessing', async () => {
    const dataDir = await dirs.make();
    const first = await openStore(dataDir);
    const lease = await first.acquireLease('a', TTL_MS, T0);
    await first.commit(commitOf(lease, 'agent-1', null, {}));
    await first.close();
    await writeFile(join(dataDir, 'agents', 'agent-1', 'doc.json'), '{"version":');
    const second = await openStore(dataDir);
    await rejection(second.loadAgent('agent-1'), 'store_unavailable');
  });

  it('spreads 3,000 events over three segments and pages across their boundaries', async () => {
    const dataDir = await dirs.make();
    const store = await openStore(dataDir);
    const lease = await store.acquireLease('a', TTL_MS, T0);
    let expected: number | null = null;
    for (const size of [999, 2, 998, 1, 1000]) {
      expected = (await store.commit(commitOf(lease, 'agent-big', expected, {}, newEvents(size)))).version;
    }
    const beforeCheckpoint = await store.readEvents('agent-big', { limit: 5000, order: 'asc' });
    await store.checkpoint();
    const files = (await readdir(join(dataDir, 'agents', 'agent-big', 'events'))).sort();
    expect(files).toEqual(['00000000.jsonl', '00000001.jsonl', '00000002.jsonl']);
    for (const [n, name] of files.entries()) {
      const seqs = (await lines(join(dataDir, 'agents', 'agent-big', 'events', name))).map((l) => JSON.parse(l).event_seq);
      expect(seqs).toEqual(Array.from({ length: 1000 }, (_, i) => n * 1000 + i + 1));
    }

    const seqs = async (s: LowdbStore, query: Parameters<LowdbStore['readEvents']>[1]): Promise<number[]> =>
      (await s.readEvents('agent-big', query)).events.map((e) => e.event_seq);
    const checkPages = async (s: LowdbStore): Promise<void> => {
      expect(await seqs(s, { after_seq: 995, limit: 10, order: 'asc' })).toEqual([996, 997, 998, 999, 1000, 1001, 1002, 1003, 1004, 1005]);
      expect(await seqs(s, { before_seq: 2003, limit: 6, order: 'desc' })).toEqual([2002, 2001, 2000, 1999, 1998, 1997]);
      expect(await seqs(s, { limit: 3, order: 'desc' })).toEqual([3000, 2999, 2998]);
      expect(await seqs(s, { after_seq: 999, before_seq: 2002, limit: 5000, order: 'asc' })).toEqual(
        Array.from({ length: 1002 }, (_, i) => 1000 + i),
      );
      expect(await seqs(s, { limit: 5000, order: 'asc' })).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
      const page = await s.readEvents('agent-big', { after_seq: 2999, limit: 5, order: 'asc' });
      expect([page.oldest_seq, page.newest_seq]).toEqual([1, 3000]);
    };
    await checkPages(store);
    expect(beforeCheckpoint.events).toEqual((await store.readEvents('agent-big', { limit: 5000, order: 'asc' })).events);
    await store.close();
    // A log ending exactly on a segment boundary reopens cleanly and continues in a new segment.
    const reopened = await openStore(dataDir);
    await checkPages(reopened);
    const next = await reopened.commit(commitOf(lease, 'agent-big', 5, {}, newEvents(1)));
    expect(next.events[0]?.event_seq).toBe(3001);
    await reopened.checkpoint();
    expect(await lines(segment(dataDir, 'agent-big', 3))).toHaveLength(1);
  });

  it('writes the events of commits batched together in order, each segment line once', async () => {
    const dataDir = await dirs.make();
    const store = await openStore(dataDir);
    const lease = await store.acquireLease('a', TTL_MS, T0);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.commit(commitOf(lease, 'agent-g', i === 0 ? null : i, { i }, newEvents(60, `c${i}`))),
      ),
    );
    expect(results.map((r) => r.version)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    await store.checkpoint();
    const onDisk = [...(await lines(segment(dataDir, 'agent-g', 0))), ...(await lines(segment(dataDir, 'agent-g', 1)))].map(
      (l) => JSON.parse(l),
    );
    expect(onDisk.map((e) => e.event_seq)).toEqual(Array.from({ length: 1200 }, (_, i) => i + 1));
    expect(onDisk.map((e) => e.payload.tag)).toEqual(results.flatMap((_, i) => Array.from({ length: 60 }, () => `c${i}`)));
    expect(JSON.parse(await readFile(join(dataDir, 'agents', 'agent-g', 'doc.json'), 'utf8'))).toEqual({
      version: 20,
      last_event_seq: 1200,
      doc: { i: 19 },
    });
  });

  describe('write-ahead log, checkpoints and the roster index', () => {
    const walFiles = async (dataDir: string): Promise<string[]> => (await readdir(join(dataDir, 'wal'))).filter((n) => n.endsWith('.wal'));

    /** What a power loss could leave of a live writer's directory: a copy taken while it is open. */
    async function crashImage(dataDir: string): Promise<string> {
      const image = await dirs.make('holon-store-image-');
      await cp(dataDir, image, { recursive: true });
      await rm(join(image, 'writer.lock'), { force: true });
      return image;
    }

    it('lists agents and roster entries from roster.tsv without reading any doc.json', async () => {
      const dataDir = await dirs.make();
      const first = await openStore(dataDir);
      const lease = await first.acquireLease('a', TTL_MS, T0);
      await first.commit({ ...commitOf(lease, 'agent-1', null, { big: 1 }), roster: { phase: 'active' } });
      await first.commit(commitOf(lease, 'agent-2', null, {}));
      await first.commit({ ...commitOf(lease, 'agent-1', 1, { big: 2 }), roster: { phase: 'sleeping' } });
      await first.close();
      expect(await walFiles(dataDir)).toEqual([]);
      expect(await readFile(join(dataDir, 'roster.tsv'), 'utf8')).toBe('holon-roster 1\nagent-1\t2\t0\t{"phase":"sleeping"}\nagent-2\t1\t0\t\n');
      for (const agent of ['agent-1', 'agent-2']) await rm(join(dataDir, 'agents', agent, 'doc.json'));

      const second = await openStore(dataDir);
      expect(await second.listAgentIds()).toEqual(['agent-1', 'agent-2']);
      expect(await second.listRoster()).toEqual([
        { agent_id: 'agent-1', version: 2, roster: { phase: 'sleeping' } },
        { agent_id: 'agent-2', version: 1, roster: null },
      ]);
      // Documents are read only when asked for: the missing one is reported then.
      await rejection(second.loadAgent('agent-1'), 'store_unavailable');
    });

    it('recovers every acknowledged commit from the log when the checkpointed files lack them or are torn, and cuts a torn log tail', async () => {
      const dataDir = await dirs.make();
      const live = await openStore(dataDir, false);
      const lease = await live.acquireLease('a', TTL_MS, T0);
      await live.commit({ ...commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(3)), roster: { r: 1 } });
      await live.commit(commitOf(lease, 'agent-1', 1, { v: 2 }, newEvents(2)));
      await live.commit(commitOf(lease, 'agent-2', null, { w: 1 }, newEvents(1)));
      const image = await crashImage(dataDir);
      // No checkpoint ran: the files do not exist. A crash inside a round's write leaves agent-1
      // a torn first line, and the log ends in half a record.
      await expect(stat(join(image, 'agents', 'agent-1', 'doc.json'))).rejects.toThrow();
      await mkdir(join(image, 'agents', 'agent-1', 'events'), { recursive: true });
      await writeFile(segment(image, 'agent-1', 0), '{"id":"agen');
      const [log] = await walFiles(image);
      const whole = (await stat(join(image, 'wal', log!))).size;
      await appendFile(join(image, 'wal', log!), Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 123, 34]));

      const recovered = await openStore(image);
      expect((await stat(join(image, 'wal', log!))).size).toBe(whole);
      expect(await recovered.listRoster()).toEqual([
        { agent_id: 'agent-1', version: 2, roster: { r: 1 } },
        { agent_id: 'agent-2', version: 1, roster: null },
      ]);
      expect(await recovered.loadAgent('agent-1')).toEqual({ version: 2, doc: { v: 2 }, last_event_seq: 5 });
      expect(await recovered.loadAgent('agent-2')).toEqual({ version: 1, doc: { w: 1 }, last_event_seq: 1 });
      expect((await lines(segment(image, 'agent-1', 0))).map((l) => JSON.parse(l).event_seq)).toEqual([1, 2, 3, 4, 5]);
      const next = await recovered.commit(commitOf(lease, 'agent-1', 2, { v: 3 }, newEvents(1)));
      expect(next.events[0]?.event_seq).toBe(6);
    });

    it('replays the log idempotently: recovering the same crash image twice gives the same files', async () => {
      const dataDir = await dirs.make();
      const live = await openStore(dataDir, false);
      const lease = await live.acquireLease('a', TTL_MS, T0);
      let version: number | null = null;
      for (let i = 0; i < 5; i += 1) version = (await live.commit(commitOf(lease, 'agent-1', version, { i }, newEvents(300)))).version;
      const image = await crashImage(dataDir);

      const once = await openStore(image);
      const state = await once.loadAgent('agent-1');
      // Killed right after recovery (nothing checkpointed yet), then recovered again.
      const again = await openStore(await crashImage(image));
      expect(await again.loadAgent('agent-1')).toEqual(state);
      expect(state).toEqual({ version: 5, doc: { i: 4 }, last_event_seq: 1500 });
      const page = await again.readEvents('agent-1', { limit: 2000, order: 'asc' });
      expect(page.events.map((e) => e.event_seq)).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1));
      const segmentLines = (await lines(segment(image, 'agent-1', 0))).length + (await lines(segment(image, 'agent-1', 1))).length;
      expect(segmentLines).toBe(1500);
    });

    it('logs only the fields a commit changed once it holds the version before, and recovers them over a record or doc.json', async () => {
      const dataDir = await dirs.make();
      const live = await openStore(dataDir, false);
      const lease = await live.acquireLease('a', TTL_MS, T0);
      const history = { big: 'x'.repeat(4000) };
      const walText = async (dir: string) => (await Promise.all((await walFiles(dir)).map((f) => readFile(join(dir, 'wal', f), 'latin1')))).join('');
      await live.commit(commitOf(lease, 'agent-1', null, { history, n: 1 }, newEvents(1)));
      await live.checkpoint();
      // Versions 2 and 3 share `history` with version 1: the log holds only what changed.
      await live.commit(commitOf(lease, 'agent-1', 1, { history, n: 2 }, newEvents(1)));
      await live.commit(commitOf(lease, 'agent-1', 2, { history, n: 3, added: [1] }, newEvents(1)));
      const logged = await walText(dataDir);
      expect(logged).not.toContain(history.big);
      expect(logged.match(/"p":\{/g)).toHaveLength(2);
      const expected = { version: 3, doc: { history, n: 3, added: [1] }, last_event_seq: 3 };

      // Over doc.json (version 1), by a reader and by the next writer.
      const image = await crashImage(dataDir);
      expect(await (await CommittedView.read(image)).agent('agent-1')).toMatchObject({ version: 3, doc: expected.doc });
      const recovered = await openStore(image);
      expect(await recovered.loadAgent('agent-1')).toEqual(expected);
      expect(JSON.parse(await readFile(join(image, 'agents', 'agent-1', 'doc.json'), 'utf8'))).toMatchObject({ version: 3, doc: expected.doc });

      // Over an earlier whole record: an evicted agent's next commit logs its whole document.
      live.evictAgent('agent-1');
      await live.commit(commitOf(lease, 'agent-1', 3, { history, n: 4, added: [1] }));
      await live.commit(commitOf(lease, 'agent-1', 4, { history, n: 5, added: [1] }));
      expect(await walText(dataDir)).toContain(history.big);
      const second = await crashImage(dataDir);
      await rm(join(second, 'agents', 'agent-1', 'doc.json'));
      expect(await (await openStore(second)).loadAgent('agent-1')).toEqual({ version: 5, doc: { history, n: 5, added: [1] }, last_event_seq: 3 });

      // Patches whose base is gone are refused, not guessed at.
      const broken = await crashImage(image);
      await rm(join(broken, 'agents', 'agent-1', 'doc.json'));
      await expect(openStore(broken)).rejects.toThrow(/doc\.json that is missing/);
    });

    it('logs lists and records that changed by a few entries as deltas, and recovers them over doc.json and over a whole record', async () => {
      const dataDir = await dirs.make();
      const live = await openStore(dataDir, false);
      const lease = await live.acquireLease('a', TTL_MS, T0);
      const big = (tag: string) => ({ tag, pad: tag.repeat(2000) });
      const [a, b, c] = [big('a'), big('b'), big('c')];
      const walText = async (dir: string) => (await Promise.all((await walFiles(dir)).map((f) => readFile(join(dir, 'wal', f), 'latin1')))).join('');
      await live.commit(commitOf(lease, 'agent-1', null, { list: [a, b], map: { a, b } }));
      await live.checkpoint();
      // Version 2 drops `a` and appends `c`; version 3 appends a small entry: only those are logged.
      await live.commit(commitOf(lease, 'agent-1', 1, { list: [b, c], map: { b, c } }));
      await live.commit(commitOf(lease, 'agent-1', 2, { list: [b, c, { tag: 'd' }], map: { b, c, d: { tag: 'd' } } }));
      const logged = await walText(dataDir);
      expect(logged.split(b.pad)).toHaveLength(1);
      expect(logged.split(c.pad)).toHaveLength(3);
      const expected = { list: [b, c, { tag: 'd' }], map: { b, c, d: { tag: 'd' } } };

      const overDocJson = await openStore(await crashImage(dataDir));
      expect((await overDocJson.loadAgent('agent-1'))?.doc).toEqual(expected);

      live.evictAgent('agent-1');
      await live.commit(commitOf(lease, 'agent-1', 3, { list: [c, { tag: 'd' }], map: { c, d: { tag: 'd' } } }));
      await live.commit(commitOf(lease, 'agent-1', 4, { list: [c], map: { c } }));
      const overRecord = await crashImage(dataDir);
      await rm(join(overRecord, 'agents', 'agent-1', 'doc.json'));
      expect(await (await openStore(overRecord)).loadAgent('agent-1')).toEqual({ version: 5, doc: { list: [c], map: { c } }, last_event_seq: 0 });
    });

    it('refuses a document that is not JSON, whole or as a patch, alone and without writing it', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      await rejection(store.commit(commitOf(lease, 'agent-1', null, { n: 10n })), 'invalid_request');
      await store.commit(commitOf(lease, 'agent-1', null, { n: 1 }));
      // The next commit would be a patch of the changed field; it fails while another agent's commit in the same batch lands.
      const [bad, good] = await Promise.allSettled([
        store.commit(commitOf(lease, 'agent-1', 1, { n: 2n })),
        store.commit(commitOf(lease, 'agent-2', null, { ok: true })),
      ]);
      expect(bad.status === 'rejected' && (bad.reason as { code?: string }).code).toBe('invalid_request');
      expect(good.status).toBe('fulfilled');
      await store.commit(commitOf(lease, 'agent-1', 1, { n: 3 }));
      await store.close();
      const reopened = await openStore(dataDir);
      expect(await reopened.loadAgent('agent-1')).toEqual({ version: 2, doc: { n: 3 }, last_event_seq: 0 });
      expect(await reopened.loadAgent('agent-2')).toEqual({ version: 1, doc: { ok: true }, last_event_seq: 0 });
    });

    it('checkpoints by itself past checkpointBytes, writing roster.tsv and deleting the log files it covered', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir, true, 4096);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      await store.commit({ ...commitOf(lease, 'agent-1', null, { pad: 'x'.repeat(5000) }), roster: { n: 1 } });
      // The commit that crossed the threshold queued a round; the next explicit one waits for it.
      await store.checkpoint();
      expect(await walFiles(dataDir)).toEqual([]);
      expect(store.residentState().uncheckpointedAgents).toBe(0);
      expect(await readFile(join(dataDir, 'roster.tsv'), 'utf8')).toContain('agent-1\t1\t0\t{"n":1}');

      await store.commit(commitOf(lease, 'agent-2', null, {}));
      expect(await walFiles(dataDir)).toHaveLength(1);
      expect(store.residentState().uncheckpointedAgents).toBe(1);
      await store.checkpoint();
      expect(await walFiles(dataDir)).toEqual([]);
      expect(await readFile(join(dataDir, 'roster.tsv'), 'utf8')).toContain('agent-2\t1\t0\t\n');
    });

    it('checkpoints by itself once checkpointAgents agents have commits the files lack, however small the log', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir, true, undefined, 3);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      await store.commit(commitOf(lease, 'agent-1', null, { n: 1 }));
      await store.commit(commitOf(lease, 'agent-2', null, { n: 1 }));
      expect(store.residentState().uncheckpointedAgents).toBe(2);
      // The third agent's commit reaches the bound: the round it queues writes all three.
      await store.commit(commitOf(lease, 'agent-3', null, { n: 1 }));
      await store.checkpoint();
      expect(store.residentState().uncheckpointedAgents).toBe(0);
      expect(await walFiles(dataDir)).toEqual([]);
      for (const agent of ['agent-1', 'agent-2', 'agent-3']) {
        expect(JSON.parse(await readFile(join(dataDir, 'agents', agent, 'doc.json'), 'utf8'))).toMatchObject({ version: 1, doc: { n: 1 } });
      }
    });

    it('keeps an evicted agent\'s uncheckpointed version readable, as text', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      const doc = { list: [{ a: 1 }] };
      await store.commit(commitOf(lease, 'agent-1', null, doc));
      store.evictAgent('agent-1');
      // What the store serialized at eviction is what it returns, whatever becomes of the caller's objects.
      (doc.list[0] as { a: number }).a = 2;
      expect(await store.loadAgent('agent-1')).toEqual({ version: 1, doc: { list: [{ a: 1 }] }, last_event_seq: 0 });
    });

    it('acknowledges a commit with the log append alone: the agent files are written by the next checkpoint round', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      await store.commit({ ...commitOf(lease, 'agent-1', null, { v: 1 }, newEvents(1200)), roster: { r: 1 } });
      await store.checkpoint();
      await store.commit(commitOf(lease, 'agent-1', 1, { v: 2 }, newEvents(3, 'late')));
      await store.commit(commitOf(lease, 'agent-2', null, { w: 1 }, newEvents(2)));
      // Not written yet: doc.json and the segments hold the first commit only.
      expect(JSON.parse(await readFile(join(dataDir, 'agents', 'agent-1', 'doc.json'), 'utf8'))).toMatchObject({ version: 1, last_event_seq: 1200 });
      expect(await lines(segment(dataDir, 'agent-1', 1))).toHaveLength(200);
      await expect(stat(join(dataDir, 'agents', 'agent-2'))).rejects.toThrow();
      expect(store.residentState().uncheckpointedAgents).toBe(2);

      // The store reads its memory for what the files lack, the files for the rest.
      expect(await store.loadAgent('agent-1')).toEqual({ version: 2, doc: { v: 2 }, last_event_seq: 1203 });
      const page = await store.readEvents('agent-1', { after_seq: 1195, limit: 10, order: 'asc' });
      expect(page.events.map((e) => [e.event_seq, e.payload['tag']])).toEqual([
        [1196, 'e'], [1197, 'e'], [1198, 'e'], [1199, 'e'], [1200, 'e'], [1201, 'late'], [1202, 'late'], [1203, 'late'],
      ]);
      expect(await store.listRoster()).toEqual([
        { agent_id: 'agent-1', version: 2, roster: { r: 1 } },
        { agent_id: 'agent-2', version: 1, roster: null },
      ]);

      // So does the read-only view of the directory, from the log, without writing or locking anything.
      const before = (await readdir(dataDir, { recursive: true })).sort();
      const view = await CommittedView.read(dataDir);
      expect(view.agentIds()).toEqual(['agent-1', 'agent-2']);
      expect(await view.agent('agent-1')).toEqual({ version: 2, last_event_seq: 1203, doc: { v: 2 }, roster: { r: 1 } });
      expect(await view.agent('agent-2')).toEqual({ version: 1, last_event_seq: 2, doc: { w: 1 } });
      expect(await view.agent('nobody')).toBeNull();
      expect(await view.events('agent-1', 1, 1203)).toEqual((await store.readEvents('agent-1', { limit: 2000, order: 'asc' })).events);
      expect((await view.events('agent-2', 1, 2)).map((e) => e.event_seq)).toEqual([1, 2]);
      expect((await readdir(dataDir, { recursive: true })).sort()).toEqual(before);

      await store.checkpoint();
      expect(store.residentState().uncheckpointedAgents).toBe(0);
      expect(JSON.parse(await readFile(join(dataDir, 'agents', 'agent-1', 'doc.json'), 'utf8'))).toEqual({ version: 2, last_event_seq: 1203, doc: { v: 2 }, roster: { r: 1 } });
      expect((await lines(segment(dataDir, 'agent-1', 1))).map((l) => JSON.parse(l).event_seq)).toEqual(Array.from({ length: 203 }, (_, i) => 1001 + i));
      expect(await store.loadAgent('agent-2')).toEqual({ version: 1, doc: { w: 1 }, last_event_seq: 2 });
      const after = await CommittedView.read(dataDir);
      expect(await after.agent('agent-1')).toEqual(await view.agent('agent-1'));
      expect(await after.events('agent-1', 1195, 1203)).toEqual(await view.events('agent-1', 1195, 1203));
    });

    it('reads every acknowledged commit while a checkpoint round writes them and commits continue', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      const ids = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
      await Promise.all(ids.map((id) => store.commit(commitOf(lease, id, null, { id, n: 1 }, newEvents(3, 'first')))));
      const check = async (id: string, n: number): Promise<void> => {
        expect(await store.loadAgent(id)).toEqual({ version: n, doc: { id, n }, last_event_seq: n * 3 });
        const page = await store.readEvents(id, { limit: 100, order: 'asc' });
        expect(page.events.map((e) => e.event_seq)).toEqual(Array.from({ length: n * 3 }, (_, i) => i + 1));
      };

      let writing = true;
      const round = store.checkpoint().finally(() => (writing = false));
      // Commits continue (before or after the round seals its generation); reads see everything.
      const second = Promise.all(ids.slice(0, 100).map((id) => store.commit(commitOf(lease, id, 1, { id, n: 2 }, newEvents(3, 'second')))));
      while (writing) {
        await Promise.all(ids.slice(100).map((id) => check(id, 1)));
        // Reads served from memory never wait for I/O: let the round's file operations complete.
        await new Promise((resolve) => setImmediate(resolve));
      }
      await round;
      await second;
      for (const [i, id] of ids.entries()) await check(id, i < 100 ? 2 : 1);
      await store.checkpoint();
      expect(store.residentState().uncheckpointedAgents).toBe(0);
      for (const [i, id] of ids.entries()) await check(id, i < 100 ? 2 : 1);
      expect((await lines(segment(dataDir, 'agent-0', 0))).map((l) => JSON.parse(l).payload.tag)).toEqual(['first', 'first', 'first', 'second', 'second', 'second']);
    });

    it('keeps no per-agent state after eviction but the roster entry: no open file, no document', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('a', TTL_MS, T0);
      const ids = Array.from({ length: 20 }, (_, i) => `agent-${i}`);
      await Promise.all(ids.map((id) => store.commit(commitOf(lease, id, null, { id }, newEvents(2)))));
      // Until a checkpoint writes them, the commits are held in memory; after it, nothing is.
      expect(store.residentState().uncheckpointedAgents).toBe(20);
      await store.checkpoint();
      expect(store.residentState().uncheckpointedAgents).toBe(0);
      expect(store.residentState().openFiles).toBeGreaterThanOrEqual(20);
      for (const id of ids) store.evictAgent(id);
      expect(store.residentState()).toMatchObject({ agents: 20, openFiles: 0 });
      // Nothing was cached: what is read comes from the files.
      const doc = JSON.parse(await readFile(join(dataDir, 'agents', 'agent-3', 'doc.json'), 'utf8'));
      expect(await store.loadAgent('agent-3')).toEqual({ version: doc.version, doc: doc.doc, last_event_seq: doc.last_event_seq });
    });
  });

  describe('writer.lock', () => {
    it('refuses a second live writer with a clear message', async () => {
      const dataDir = await dirs.make();
      await openStore(dataDir);
      const second = new LowdbStore({ dataDir });
      const error = await rejection(second.open(), 'lease_lost');
      expect(error.message).toBe(`data directory ${dataDir} is already used by process ${process.pid}`);
    });

    it('takes over the lock of a dead process', async () => {
      const dataDir = await dirs.make();
      await writeFile(join(dataDir, 'writer.lock'), '99999999\n');
      await openStore(dataDir);
      expect(Number(await readFile(join(dataDir, 'writer.lock'), 'utf8'))).toBe(process.pid);
    });

    it('is released by close, letting the next writer in', async () => {
      const dataDir = await dirs.make();
      const first = await openStore(dataDir);
      await first.close();
      const second = await openStore(dataDir);
      await second.acquireLease('b', TTL_MS, T0);
      expect((await second.readLease())?.holder).toBe('b');
    });

    it('is not taken when exclusiveProcessLock is false', async () => {
      const dataDir = await dirs.make();
      await openStore(dataDir, false);
      await openStore(dataDir, false);
      await expect(stat(join(dataDir, 'writer.lock'))).rejects.toThrow();
    });
  });

  describe('lease across instances sharing a directory', () => {
    it('fences the old holder as soon as lease.json shows a takeover', async () => {
      const dataDir = await dirs.make();
      const old = await openStore(dataDir, false);
      const next = await openStore(dataDir, false);
      const oldLease = await old.acquireLease('old', 1_000, T0);
      await old.commit(commitOf(oldLease, 'agent-1', null, { by: 'old' }, newEvents(1)));

      await rejection(next.acquireLease('new', 1_000, at(999)), 'lease_lost');
      const newLease = await next.acquireLease('new', 1_000, at(1_000));
      expect(newLease.fencing_token).toBe(oldLease.fencing_token + 1);

      await rejection(old.commit(commitOf(oldLease, 'agent-1', 1, { by: 'old again' }, newEvents(1))), 'lease_lost');
      await rejection(old.putGlobal('k', 'old', oldLease.fencing_token), 'lease_lost');
      await rejection(old.renewLease(oldLease, 1_000, at(1_001)), 'lease_lost');
      await rejection(old.acquireLease('old', 1_000, at(1_001)), 'lease_lost');

      const committed = await next.commit(commitOf(newLease, 'agent-1', 1, { by: 'new' }, newEvents(1)));
      expect(committed.events[0]?.event_seq).toBe(2);
      await next.checkpoint();
      expect(JSON.parse(await readFile(join(dataDir, 'agents', 'agent-1', 'doc.json'), 'utf8')).doc).toEqual({ by: 'new' });
    });

    it('lets the new holder see what the old one wrote after it had cached the agent', async () => {
      const dataDir = await dirs.make();
      const old = await openStore(dataDir, false);
      const oldLease = await old.acquireLease('old', 1_000, T0);
      await old.commit(commitOf(oldLease, 'agent-1', null, { v: 1 }, newEvents(1)));
      await old.putGlobal('k', 1, oldLease.fencing_token);
      // The future holder opens and reads (and caches) while the old one is still writing.
      const next = await openStore(dataDir, false);
      expect((await next.loadAgent('agent-1'))?.version).toBe(1);
      expect(await next.getGlobal('k')).toBe(1);
      await old.commit(commitOf(oldLease, 'agent-1', 1, { v: 2 }, newEvents(2)));
      await old.putGlobal('k', 2, oldLease.fencing_token);

      const newLease = await next.acquireLease('new', 1_000, at(2_000));
      expect(await next.loadAgent('agent-1')).toEqual({ version: 2, doc: { v: 2 }, last_event_seq: 3 });
      expect(await next.getGlobal('k')).toBe(2);
      expect((await next.readEvents('agent-1', { limit: 10, order: 'asc' })).newest_seq).toBe(3);
      const committed = await next.commit(commitOf(newLease, 'agent-1', 2, { v: 3 }, newEvents(1)));
      expect(committed.events[0]?.event_seq).toBe(4);
    });

    it('refuses a token whose holder in lease.json is not the one this instance acquired it as', async () => {
      const dataDir = await dirs.make();
      const store = await openStore(dataDir);
      const lease = await store.acquireLease('mine', TTL_MS, T0);
      const stolen: Lease = { ...lease, holder: 'someone-else' };
      await writeFile(join(dataDir, 'lease.json'), JSON.stringify(stolen));
      await rejection(store.commit(commitOf(lease, 'agent-1', null, {})), 'lease_lost');
      expect(await store.loadAgent('agent-1')).toBeNull();
    });

    it('never hands out the same token twice when instances acquire concurrently', async () => {
      const dataDir = await dirs.make();
      const stores = await Promise.all([0, 1, 2, 3].map(() => openStore(dataDir, false)));
      const outcomes = await Promise.allSettled(stores.map((s, i) => s.acquireLease(`h${i}`, 1_000, T0)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      // After expiry every instance tries again: still exactly one wins, and the file names it.
      const later = await Promise.allSettled(stores.map((s, i) => s.acquireLease(`h${i}`, 1_000, at(5_000))));
      const winners = later.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
      expect(winners).toHaveLength(1);
      expect(await stores[0]!.readLease()).toEqual(winners[0]);
    });
  });
});
