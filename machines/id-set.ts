/**
 * An immutable set of ids for machine context (a hash trie: 16 slots a node, at most 8 levels).
 * Adding or removing an id copies the one path to it, never the whole set, so a supervisor's
 * membership costs O(1) per attach or detach however many agents its shard holds, and every
 * earlier snapshot keeps the set it had.
 */
export interface IdSet {
  readonly slots: readonly Slot[];
}

/** The ids whose hashes agree on every bit read so far: one, unless all 32 bits collide. */
type Bucket = readonly string[];
type Slot = IdSet | Bucket | undefined;

const BITS = 4;
const MASK = (1 << BITS) - 1;
const HASH_BITS = 32;

export const emptyIdSet: IdSet = { slots: [] };

export function hasId(set: IdSet, id: string): boolean {
  const hash = hashOf(id);
  let node = set;
  for (let shift = 0; ; shift += BITS) {
    const slot = node.slots[(hash >>> shift) & MASK];
    if (slot === undefined) return false;
    if (!isBucket(slot)) {
      node = slot;
      continue;
    }
    return slot.includes(id);
  }
}

/** `set` itself when it already holds `id`. */
export function addId(set: IdSet, id: string): IdSet {
  return insert(set, id, hashOf(id), 0);
}

/** `set` itself when it does not hold `id`. */
export function removeId(set: IdSet, id: string): IdSet {
  return remove(set, id, hashOf(id), 0) ?? emptyIdSet;
}

/** Every id, sorted (for inspection and tests; O(size)). */
export function idsOf(set: IdSet): string[] {
  const ids: string[] = [];
  const visit = (node: IdSet): void => {
    for (const slot of node.slots) {
      if (slot === undefined) continue;
      if (isBucket(slot)) ids.push(...slot);
      else visit(slot);
    }
  };
  visit(set);
  return ids.sort();
}

function insert(node: IdSet, id: string, hash: number, shift: number): IdSet {
  const index = (hash >>> shift) & MASK;
  const slot = node.slots[index];
  if (slot === undefined) return withSlot(node, index, [id]);
  if (!isBucket(slot)) {
    const child = insert(slot, id, hash, shift + BITS);
    return child === slot ? node : withSlot(node, index, child);
  }
  if (slot.includes(id)) return node;
  if (shift + BITS >= HASH_BITS) return withSlot(node, index, [...slot, id]);
  // Below the last level a bucket holds one id: it moves one level down, next to the new one.
  const other = slot[0] as string;
  const split = insert(insert(emptyIdSet, other, hashOf(other), shift + BITS), id, hash, shift + BITS);
  return withSlot(node, index, split);
}

/** `undefined` when the node is left empty, so emptied paths are not kept. */
function remove(node: IdSet, id: string, hash: number, shift: number): IdSet | undefined {
  const index = (hash >>> shift) & MASK;
  const slot = node.slots[index];
  if (slot === undefined) return node;
  let next: Slot;
  if (!isBucket(slot)) {
    next = remove(slot, id, hash, shift + BITS);
    if (next === slot) return node;
  } else {
    if (!slot.includes(id)) return node;
    const rest = slot.filter((other) => other !== id);
    next = rest.length > 0 ? rest : undefined;
  }
  const copy = withSlot(node, index, next);
  return copy.slots.some((s) => s !== undefined) ? copy : undefined;
}

function withSlot(node: IdSet, index: number, slot: Slot): IdSet {
  const slots = node.slots.slice();
  slots[index] = slot;
  return { slots };
}

function isBucket(slot: IdSet | Bucket): slot is Bucket {
  return Array.isArray(slot);
}

/** FNV-1a over UTF-16 code units: cheap, and spreads the ids' random suffixes over the slots. */
function hashOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
