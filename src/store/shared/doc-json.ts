import { z } from 'zod';

/**
 * The JSON of committed documents, reusing what earlier commits serialized. A document shares
 * most of its objects with the one before it (the store owns a committed document and the caller
 * never edits it or anything in it, `Commit.doc`), so the text of each top-level field, and of
 * each element of a field that is an array or a record, is cached by object identity: a commit
 * serializes only what is new. Agents keep dozens of transition records and messages, and
 * stringifying the whole document on every commit was most of a durable commit's CPU time.
 * The text is exactly `JSON.stringify(doc)`.
 *
 * Keep one per agent, dropped with the agent: the cache is a WeakMap, which V8's garbage collector
 * pays for by its size. One cache of 1,000 agents' objects made single insertions take up to 155
 * ms as its table grew (a quarter of a durable accept's profiled CPU, bench/accept-probe.ts).
 */
export class DocJson {
  private readonly cache = new WeakMap<object, string>();
  /** An element of an array or record field: serialized whole, once. */
  private readonly leaf: Part = (value) => this.cached(value, () => JSON.stringify(value));

  stringify(doc: unknown): string {
    if (!isRecord(doc)) return JSON.stringify(doc);
    return objectJson(doc, (value) => this.field(value));
  }

  /**
   * The document's top-level fields (`DocField`s, in order), leaving
   * out what JSON leaves out; with `previous`, only the fields that are not its very objects (or
   * equal primitives), each as a `FieldDelta` against its previous value where `asDelta` allows
   * it (by the field's JSON name) and one can say it. `null` when `doc` is not a plain record, or
   * (with `previous`) when `previous` is not one or a field was removed: then only a whole rewrite
   * says it.
   */
  fields(doc: unknown, previous?: unknown, asDelta?: (name: string) => boolean): DocField[] | null {
    if (!isRecord(doc)) return null;
    let before: Record<string, unknown> | null = null;
    if (previous !== undefined) {
      if (!isRecord(previous)) return null;
      for (const key of Object.keys(previous)) if (!Object.hasOwn(doc, key)) return null;
      before = previous;
    }
    const fields: DocField[] = [];
    const keys = Object.keys(doc);
    for (let ord = 0; ord < keys.length; ord++) {
      const key = keys[ord] as string;
      const value = doc[key];
      if (before !== null && value === before[key]) continue;
      const name = JSON.stringify(key);
      const delta = before !== null && asDelta?.(name) === true ? this.delta(value, before[key]) : null;
      if (delta !== null) {
        fields.push({ name, ord, json: delta, delta: true });
        continue;
      }
      const json = valueJson(value, (part) => this.field(part));
      if (json !== undefined) fields.push({ name, ord, json, delta: false });
      // JSON leaves the field out: a patch cannot remove it from `previous`.
      else if (before !== null) return null;
    }
    return fields;
  }

  /**
   * What changed from `previous` to `doc`, for a log record to lay over `previous`: `fields`
   * holds the fields that are not the very objects (or equal primitives) of `previous`, whole;
   * `deltas` the changed arrays and records that still share parts with their previous value, as
   * `FieldDelta`s (an agent's transition records and messages change by one or two entries a
   * commit, out of dozens). `null` when no patch can say it: either is not a plain object, or a
   * field was removed (or became a value JSON leaves out). It shares `stringify`'s cache.
   */
  patch(doc: unknown, previous: unknown): { fields: string; deltas: string | null } | null {
    if (!isRecord(doc) || !isRecord(previous)) return null;
    const keys = Object.keys(doc);
    for (const key of Object.keys(previous)) if (!Object.hasOwn(doc, key)) return null;
    const changed: Record<string, unknown> = {};
    let deltas = '';
    for (const key of keys) {
      const value = doc[key];
      const before = previous[key];
      if (value === before) continue;
      // JSON leaves the field out, and a patch cannot remove it from `previous`.
      if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return null;
      const delta = this.delta(value, before);
      if (delta === null) changed[key] = value;
      else deltas += `${deltas === '' ? '' : ','}${JSON.stringify(key)}:${delta}`;
    }
    return { fields: objectJson(changed, (value) => this.field(value)), deltas: deltas === '' ? null : `{${deltas}}` };
  }

  /** A `FieldDelta` from `before` to `value`, when both are arrays or both records sharing objects (sharing primitives saves nothing worth a delta). */
  private delta(value: unknown, before: unknown): string | null {
    if (Array.isArray(value) && Array.isArray(before)) {
      // A list usually changes by dropping its oldest entries and appending: each run starts where
      // the last one ended, so only a run's first entry is looked up. The first two lookups scan
      // (the list's start, an appended entry); more build an index of every position.
      let at: Map<unknown, number> | null = null;
      let scans = 0;
      const find = (element: unknown): number | undefined => {
        if (at === null && scans++ < 2) {
          const i = before.indexOf(element);
          return i < 0 ? undefined : i;
        }
        at ??= positions(before);
        return at.get(element);
      };
      const parts: string[] = [];
      let shared = 0;
      let next = -1;
      for (let k = 0; k < value.length; ) {
        const start = next >= 0 && next < before.length && before[next] === value[k] ? next : find(value[k]);
        if (start === undefined) {
          parts.push(`{"v":${valueJson(value[k], this.leaf) ?? 'null'}}`);
          k += 1;
          continue;
        }
        let end = start;
        while (k < value.length && end < before.length && before[end] === value[k]) {
          end += 1;
          k += 1;
        }
        for (let i = start; i < end; i++) if (isObject(before[i])) shared += 1;
        parts.push(`[${start},${end}]`);
        next = end;
      }
      return shared > 0 ? `{"a":[${parts.join(',')}]}` : null;
    }
    if (isRecord(value) && isRecord(before)) {
      const set: Record<string, unknown> = {};
      const removed: string[] = [];
      let shared = 0;
      for (const key of Object.keys(value)) {
        const element = value[key];
        if (Object.hasOwn(before, key) && element === before[key]) shared += isObject(element) ? 1 : 0;
        else if (element === undefined || typeof element === 'function' || typeof element === 'symbol') return null;
        else set[key] = element;
      }
      for (const key of Object.keys(before)) if (!Object.hasOwn(value, key)) removed.push(key);
      return shared > 0 ? `{"o":{"set":${objectJson(set, this.leaf)},"del":${JSON.stringify(removed)}}}` : null;
    }
    return null;
  }

  /** A top-level field: an array or record is assembled from its cached elements. */
  private field(value: object): string {
    return this.cached(value, () =>
      Array.isArray(value) ? arrayJson(value, this.leaf) : isPlain(value) ? objectJson(value as Record<string, unknown>, this.leaf) : JSON.stringify(value),
    );
  }

  private cached(value: object, make: () => string): string {
    let text = this.cache.get(value);
    if (text === undefined) {
      text = make();
      this.cache.set(value, text);
    }
    return text;
  }
}

type Part = (value: object) => string;

/**
 * A top-level field of a document: its key as JSON, its position among the keys, and its value as
 * JSON, or (`delta`) a `FieldDelta` from its previous value as JSON.
 */
export interface DocField {
  name: string;
  ord: number;
  json: string;
  delta: boolean;
}

/**
 * A change to one field of a logged document, in terms of its previous value: `a` rebuilds an
 * array from slices `[start, end)` of the previous one and new elements `{v}`; `o` a record from
 * the previous one with `set` laid over it and the keys in `del` removed.
 */
export const FieldDelta = z.union([
  z.object({ a: z.array(z.union([z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]), z.object({ v: z.unknown() })])) }),
  z.object({ o: z.object({ set: z.record(z.string(), z.unknown()), del: z.array(z.string()) }) }),
]);
export type FieldDelta = z.infer<typeof FieldDelta>;

/** The value `delta` makes of `before`; throws when `before` is not what the delta was made against. */
export function applyFieldDelta(before: unknown, delta: FieldDelta): unknown {
  if ('a' in delta) {
    if (!Array.isArray(before)) throw new Error('an array delta needs an array');
    return delta.a.flatMap((part) => {
      if (!Array.isArray(part)) return [part.v];
      const [start, end] = part;
      if (end > before.length || start > end) throw new Error(`slice [${start}, ${end}) is outside the previous array of ${before.length}`);
      return before.slice(start, end) as unknown[];
    });
  }
  if (!isRecord(before)) throw new Error('a record delta needs a record');
  const next: Record<string, unknown> = { ...before };
  for (const key of delta.o.del) delete next[key];
  return Object.assign(next, delta.o.set);
}

/** Each element of `list` → its (last) position. */
function positions(list: readonly unknown[]): Map<unknown, number> {
  const at = new Map<unknown, number>();
  list.forEach((element, i) => at.set(element, i));
  return at;
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return isPlain(value) && !Array.isArray(value);
}

/** Plain objects and arrays only: anything with a `toJSON` or another prototype goes to JSON.stringify whole. */
function isPlain(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/** JSON.stringify's rules for one value inside a container; `undefined` for what it leaves out. */
function valueJson(value: unknown, part: Part): string | undefined {
  if (typeof value === 'object' && value !== null) return isPlain(value) ? part(value) : JSON.stringify(value);
  return JSON.stringify(value);
}

function objectJson(record: Record<string, unknown>, part: Part): string {
  let text = '';
  for (const key of Object.keys(record)) {
    const json = valueJson(record[key], part);
    if (json === undefined) continue;
    text += `${text === '' ? '' : ','}${JSON.stringify(key)}:${json}`;
  }
  return `{${text}}`;
}

function arrayJson(items: readonly unknown[], part: Part): string {
  let text = '';
  for (let i = 0; i < items.length; i++) text += `${i === 0 ? '' : ','}${valueJson(items[i], part) ?? 'null'}`;
  return `[${text}]`;
}
