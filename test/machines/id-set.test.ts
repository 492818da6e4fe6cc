import { describe, expect, it } from 'vitest';
import { addId, emptyIdSet, hasId, idsOf, removeId } from '../../machines/id-set.js';

describe('IdSet (supervisor membership)', () => {
  it('adds and removes ids, leaving every earlier set as it was', () => {
    const one = addId(emptyIdSet, 'a1');
    const two = addId(one, 'a2');
    const back = removeId(two, 'a1');
    expect(idsOf(one)).toEqual(['a1']);
    expect(idsOf(two)).toEqual(['a1', 'a2']);
    expect(idsOf(back)).toEqual(['a2']);
    expect(hasId(two, 'a1')).toBe(true);
    expect(hasId(back, 'a1')).toBe(false);
    expect(hasId(emptyIdSet, 'a1')).toBe(false);
  });

  it('returns the same set for an add of a member or a remove of a stranger', () => {
    const set = addId(addId(emptyIdSet, 'a1'), 'a2');
    expect(addId(set, 'a1')).toBe(set);
    expect(removeId(set, 'ghost')).toBe(set);
    expect(removeId(emptyIdSet, 'ghost')).toBe(emptyIdSet);
  });

  it('holds thousands of ids and empties back to the empty set', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => `agent-${i}`);
    let set = emptyIdSet;
    for (const id of ids) set = addId(set, id);
    expect(idsOf(set)).toEqual([...ids].sort());
    expect(ids.every((id) => hasId(set, id))).toBe(true);
    expect(hasId(set, 'agent-5000')).toBe(false);
    for (const id of ids) set = removeId(set, id);
    expect(set).toEqual(emptyIdSet);
  });

  // FNV-1a gives these two ids the same 32-bit hash (540ae0e6): they share the last level's bucket.
  it('keeps ids whose hashes collide apart', () => {
    const both = addId(addId(emptyIdSet, 'agent-33049'), 'agent-625200');
    expect(idsOf(both)).toEqual(['agent-33049', 'agent-625200']);
    const left = removeId(both, 'agent-33049');
    expect(hasId(left, 'agent-625200')).toBe(true);
    expect(hasId(left, 'agent-33049')).toBe(false);
    expect(idsOf(removeId(left, 'agent-625200'))).toEqual([]);
  });
});
