import { describe, expect, it } from 'vitest';
import { cloneJson } from '../../src/domain/index.js';

describe('cloneJson', () => {
  it('copies nested objects and arrays so that editing the copy leaves the original alone', () => {
    const original = { a: { b: [1, { c: 'x' }] }, list: [[1, 2], []], n: null, t: true };
    const copy = cloneJson(original);
    expect(copy).toEqual(original);
    (copy.a.b[1] as { c: string }).c = 'y';
    copy.list[0]?.push(3);
    copy.n = null;
    expect(original).toEqual({ a: { b: [1, { c: 'x' }] }, list: [[1, 2], []], n: null, t: true });
    expect(copy.a).not.toBe(original.a);
    expect(copy.list[1]).not.toBe(original.list[1]);
  });

  it('keeps properties whose value is undefined, as structuredClone does', () => {
    const copy = cloneJson({ kept: undefined, x: 1 });
    expect(Object.keys(copy)).toEqual(['kept', 'x']);
  });

  it('returns primitives as they are', () => {
    expect(cloneJson('s')).toBe('s');
    expect(cloneJson(0)).toBe(0);
    expect(cloneJson(null)).toBeNull();
    expect(cloneJson(undefined)).toBeUndefined();
  });

  it('fills the holes of a sparse array with undefined', () => {
    const sparse: unknown[] = [];
    sparse[2] = 'z';
    expect(cloneJson(sparse)).toEqual([undefined, undefined, 'z']);
  });
});
