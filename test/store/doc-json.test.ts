import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyFieldDelta, DocJson, FieldDelta } from '../../src/store/shared/doc-json.js';

describe('DocJson', () => {
  it('writes exactly what JSON.stringify writes, left-out values included', () => {
    const json = new DocJson();
    const docs: unknown[] = [
      null,
      'text',
      [1, { a: undefined }, undefined],
      { a: 1, skipped: undefined, fn: () => 1, nested: { list: [undefined, () => 2, null, 'x'], deep: { d: [1] } }, empty: {}, none: [] },
      { when: new Date(0), holder: { toJSON: () => 'custom' }, map: new Map([[1, 2]]), list: [new Date(1)] },
      { 'quote"key': { 'esc\\': 'line\nbreak' }, list: [{ k: 'v' }, [[1]]] },
    ];
    for (const doc of docs) expect(json.stringify(doc)).toBe(JSON.stringify(doc));
  });

  it('follows a document through commits that replace parts and share the rest', () => {
    const json = new DocJson();
    const settled = { id: 'm1', status: 'processed' };
    let doc: Record<string, unknown> = { state: { phase: 'active' }, queue: [settled], transitions: { t1: { seq: 1 } }, count: 1 };
    expect(json.stringify(doc)).toBe(JSON.stringify(doc));
    // The next document: new containers, the settled message and the first record shared.
    const transitions = { ...(doc['transitions'] as object), t2: { seq: 2 } };
    doc = { ...doc, state: { phase: 'sleeping' }, queue: [settled, { id: 'm2', status: 'queued' }], transitions, count: 2 };
    expect(json.stringify(doc)).toBe(JSON.stringify(doc));
    doc = { ...doc, queue: [settled], count: 3 };
    expect(json.stringify(doc)).toBe(JSON.stringify(doc));
  });

  it('reuses the text of a shared part instead of serializing it again', () => {
    const json = new DocJson();
    const record = { seq: 1 };
    const first = json.stringify({ transitions: { t1: record } });
    // Only an edit in place (which the Store contract forbids) could tell the two apart.
    record.seq = 99;
    const second = json.stringify({ transitions: { t1: record } });
    expect(first).toBe('{"transitions":{"t1":{"seq":1}}}');
    expect(second).toBe(first);
  });
});

describe('DocJson.patch', () => {
  type Patch = NonNullable<ReturnType<DocJson['patch']>>;
  /** What recovery does with a record's `p` and `q`. */
  const lay = (previous: unknown, patch: Patch) => {
    const before = previous as Record<string, unknown>;
    const doc: Record<string, unknown> = { ...before, ...(JSON.parse(patch.fields) as object) };
    const deltas = z.record(z.string(), FieldDelta).parse(JSON.parse(patch.deltas ?? '{}'));
    for (const [field, delta] of Object.entries(deltas)) doc[field] = applyFieldDelta(before[field], delta);
    return doc;
  };

  it('holds only the fields that are not the same objects or values, and lays over the previous document to give the new one', () => {
    const json = new DocJson();
    const shared = { big: 'x'.repeat(100) };
    const previous = { state: { phase: 'active' }, history: shared, count: 1, name: 'a' };
    const next = { state: { phase: 'sleeping' }, history: shared, count: 2, name: 'a' };
    json.stringify(previous);
    json.stringify(next);
    const patch = json.patch(next, previous) as Patch;
    expect(JSON.parse(patch.fields)).toEqual({ state: { phase: 'sleeping' }, count: 2 });
    expect(patch.deltas).toBeNull();
    expect(JSON.stringify(lay(previous, patch))).toBe(JSON.stringify(next));
  });

  it('an equal copy is written again: identity, not equality, decides', () => {
    const json = new DocJson();
    const previous = { state: { phase: 'active' } };
    const next = { state: { phase: 'active' } };
    expect(JSON.parse((json.patch(next, previous) as Patch).fields)).toEqual({ state: { phase: 'active' } });
    expect(json.patch(previous, previous)).toEqual({ fields: '{}', deltas: null });
  });

  it('refuses (null) what a patch cannot say: removed fields, fields becoming undefined, non-objects', () => {
    const json = new DocJson();
    expect(json.patch({ a: 1 }, { a: 1, b: 2 })).toBeNull();
    expect(json.patch({ a: 1, b: undefined }, { a: 1, b: 2 })).toBeNull();
    expect(json.patch([1], [2])).toBeNull();
    expect(json.patch({ a: 1 }, null)).toBeNull();
    expect(json.patch(null, { a: 1 })).toBeNull();
  });

  it('a field added since the previous document is in the patch', () => {
    const json = new DocJson();
    const patch = json.patch({ a: 1, added: [1] }, { a: 1 }) as Patch;
    expect(lay({ a: 1 }, patch)).toEqual({ a: 1, added: [1] });
  });

  it('logs a list that dropped its oldest entries, replaced one and appended one as slices of the previous list plus the new entries', () => {
    const json = new DocJson();
    const records = Array.from({ length: 10 }, (_, i) => ({ id: i, text: 'm'.repeat(50) }));
    const previous = { queue: records };
    const replaced = { id: 5, text: 'changed' };
    const next = { queue: [...records.slice(2, 5), replaced, ...records.slice(6), { id: 10, text: 'new' }] };
    const patch = json.patch(next, previous) as Patch;
    expect(JSON.parse(patch.fields)).toEqual({});
    expect(JSON.parse(patch.deltas ?? 'null')).toEqual({ queue: { a: [[2, 5], { v: replaced }, [6, 10], { v: { id: 10, text: 'new' } }] } });
    expect(patch.deltas).not.toContain('m'.repeat(50));
    expect(lay(previous, patch)).toEqual(next);
  });

  it('logs a list that grew past its previous end by entries JSON writes as null', () => {
    const json = new DocJson();
    const records = [{ id: 0 }, { id: 1 }];
    const previous = { queue: records };
    // A run ends at the previous list's end; the next entry, undefined, is not the previous list's
    // (absent) entry there.
    const next = { queue: [...records, undefined, { id: 2 }] };
    const patch = json.patch(next, previous) as Patch;
    expect(JSON.parse(patch.deltas ?? 'null')).toEqual({ queue: { a: [[0, 2], { v: null }, { v: { id: 2 } }] } });
    expect(lay(previous, patch)).toEqual(JSON.parse(JSON.stringify(next)));
  });

  it('logs a list changed in many places (shuffled runs, every other entry replaced) exactly', () => {
    const json = new DocJson();
    const records = Array.from({ length: 40 }, (_, i) => ({ id: i }));
    const previous = { queue: records };
    // Twenty runs in another order than before, and a replaced entry between each: more run
    // starts than a delta usually has, so the positions are looked up in an index.
    const runs = Array.from({ length: 20 }, (_, r) => records.slice(r * 2, r * 2 + 2)).reverse();
    const next = { queue: runs.flatMap((run, r) => [...run, { id: 100 + r }]) };
    const patch = json.patch(next, previous) as Patch;
    const delta = (JSON.parse(patch.deltas ?? 'null') as { queue: { a: unknown[] } }).queue.a;
    expect(delta.filter((part) => Array.isArray(part))).toHaveLength(20);
    expect(lay(previous, patch)).toEqual(next);
  });

  it('logs a record that gained and lost keys as the keys set and the keys deleted', () => {
    const json = new DocJson();
    const kept = { seq: 2 };
    const previous = { transitions: { t1: { seq: 1 }, t2: kept } };
    const next = { transitions: { t2: kept, t3: { seq: 3 } } };
    const patch = json.patch(next, previous) as Patch;
    expect(JSON.parse(patch.deltas ?? 'null')).toEqual({ transitions: { o: { set: { t3: { seq: 3 } }, del: ['t1'] } } });
    expect(lay(previous, patch)).toEqual(next);
  });

  it('writes a list or record that shares nothing with its previous value whole', () => {
    const json = new DocJson();
    const previous = { list: [{ a: 1 }], map: { k: { a: 1 } } };
    const next = { list: [{ a: 2 }], map: { k: { a: 2 } } };
    const patch = json.patch(next, previous) as Patch;
    expect(patch.deltas).toBeNull();
    expect(JSON.parse(patch.fields)).toEqual(next);
  });

  it('refuses to apply a delta to a value it was not made against', () => {
    expect(() => applyFieldDelta([1, 2], { a: [[0, 5]] })).toThrow(/outside/);
    expect(() => applyFieldDelta({}, { a: [] })).toThrow(/array/);
    expect(() => applyFieldDelta([], { o: { set: {}, del: [] } })).toThrow(/record/);
  });
});

describe('DocJson.fields', () => {
  it('writes a changed field as a FieldDelta only where the caller allows it and one can say it, in key order', () => {
    const json = new DocJson();
    const shared = { m: 1 };
    const previous = { n: 1, queue: [shared, { m: 2 }], other: [shared], fresh: [{ m: 9 }] };
    const next = { n: 2, queue: [shared, { m: 3 }], other: [shared, { m: 4 }], fresh: [{ m: 10 }] };
    const fields = json.fields(next, previous, (name) => name !== '"other"');
    expect(fields?.map((f) => [f.name, f.ord, f.delta])).toEqual([
      ['"n"', 0, false],
      ['"queue"', 1, true],
      ['"other"', 2, false],
      // Allowed, but it shares nothing with its previous value: whole.
      ['"fresh"', 3, false],
    ]);
    const queue = fields?.find((f) => f.name === '"queue"');
    expect(applyFieldDelta(previous.queue, FieldDelta.parse(JSON.parse(queue?.json ?? 'null')))).toEqual(next.queue);
    expect(JSON.parse(fields?.find((f) => f.name === '"other"')?.json ?? 'null')).toEqual(next.other);
    // Without a previous document there is nothing to be a delta of.
    expect(json.fields(next, undefined, () => true)?.every((f) => !f.delta)).toBe(true);
  });
});
