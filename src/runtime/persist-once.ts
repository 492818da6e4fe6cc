import type { AnyActorLogic, Snapshot } from 'xstate';

/**
 * `logic`, persisting each snapshot once. Snapshots are immutable, so the same snapshot always
 * persists to the same value: an agent with 100 task children persists each child once per change
 * of that child, not once per commit of the agent (which walked all 100, every commit). The
 * persisted objects are shared by the agent's successive documents, which the store contract
 * allows (a committed document is never edited), and keep their identity for the store's JSON
 * cache.
 */
export function persistOnce<T extends AnyActorLogic>(logic: T): T {
  const persisted = new WeakMap<object, Snapshot<unknown>>();
  const once: T = Object.create(logic) as T;
  once.getPersistedSnapshot = (snapshot, options) => {
    let value = persisted.get(snapshot);
    if (value === undefined) {
      value = logic.getPersistedSnapshot(snapshot, options);
      persisted.set(snapshot, value);
    }
    return value;
  };
  return once;
}
