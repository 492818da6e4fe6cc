import { DomainError } from '../../domain/index.js';

/**
 * The JSON of committed documents, reusing what earlier commits serialized. A document shares
 * most of its objects with the one before it (the store owns a committed document and the caller
 * never edits it or anything in it, `Commit.doc`), so the text of each top-level field, and of
 * each element of a field that is an array or a record, is cached by object identity: a commit
 * serializes only what is new. Agents keep dozens of transition records and messages, and
 * stringifying the whole document on every commit was most of a durable commit's CPU time.
 * The text is exactly `JSON.stringify(doc)`.
 */
export class DocJson {
  private readonly cache = new WeakMap<object, string>();

  stringify(doc: unknown): string {
    if (!isRecord(doc)) return JSON.stringify(doc);
    return objectJson(doc, (value) => this.field(value));
  }

  /**
   * The fields of `doc` that are not the very objects (or equal primitives) of `previous`, as a
   * JSON object to lay over `previous` (`{...previous, ...patch}` is `doc`); `null` when no patch
   * can say it: either is not a plain object, or a field was removed (or became a value JSON
   * leaves out). Call after `stringify(doc)`,
   * whose cache it reads.
   */
  patch(doc: unknown, previous: unknown): string | null {
    if (!isRecord(doc) || !isRecord(previous)) return null;
    const keys = Object.keys(doc);
    for (const key of Object.keys(previous)) if (!Object.hasOwn(doc, key)) return null;
    const changed: Record<string, unknown> = {};
    for (const key of keys) {
      const value = doc[key];
      if (value === previous[key]) continue;
      // JSON leaves the field out, and a patch cannot remove it from `previous`.
      if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return null;
      changed[key] = value;
    }
    return objectJson(changed, (value) => this.field(value));
  }

  /** A top-level field: an array or record is assembled from its cached elements. */
  private field(value: object): string {
    const cached = this.cache.get(value);
    if (cached !== undefined) return cached;
    const leaf = (element: object) => this.leaf(element);
    const text = Array.isArray(value) ? arrayJson(value, leaf) : isPlain(value) ? objectJson(value as Record<string, unknown>, leaf) : JSON.stringify(value);
    this.cache.set(value, text);
    return text;
  }

  private leaf(value: object): string {
    const cached = this.cache.get(value);
    if (cached !== undefined) return cached;
    const text = JSON.stringify(value);
    this.cache.set(value, text);
    return text;
  }
}

/** `make()`'s JSON (or its `null`: no patch), or `invalid_request` naming `what` when the value is not JSON (a cycle, a BigInt, nothing). */
export function toJson<T extends string | null>(what: string, make: () => T | undefined): T {
  let text: T | undefined;
  try {
    text = make();
  } catch (err) {
    throw new DomainError('invalid_request', `${what} is not JSON-serializable: ${String(err)}`);
  }
  if (text === undefined) throw new DomainError('invalid_request', `${what} is not JSON-serializable`);
  return text;
}

type Part = (value: object) => string;

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
