import { DomainError } from '../../domain/index.js';
import type { RosterEntry, RosterPage, RosterQuery } from '../store.js';

/** An agent's roster entry as an embedded store keeps it: its version and the entry's JSON. */
export interface HeldRoster {
  version: number;
  rosterJson: string | undefined;
}

/** Refuses a query no store could answer: a limit below 1 or not an integer. */
export function assertRosterQuery(query: RosterQuery): void {
  if (!Number.isInteger(query.limit) || query.limit < 1) {
    throw new DomainError('invalid_request', `a roster page needs an integer limit of 1 or more, not ${String(query.limit)}`);
  }
}

/** The index of the first of the sorted `ids` after `after` (0 without it): a binary search, so a listing pages through 100,000 agents without scanning them per page. */
export function indexAfter(ids: readonly string[], after: string | undefined): number {
  let low = 0;
  let high = ids.length;
  while (after !== undefined && low < high) {
    const middle = (low + high) >>> 1;
    if ((ids[middle] as string) > after) high = middle;
    else low = middle + 1;
  }
  return low;
}

/**
 * `listRosterPage` over sorted ids held in memory (the memory and lowdb stores): a binary search
 * to the cursor, then a scan that keeps the matching entries, as the PostgreSQL store's query does.
 */
export function rosterPageOf(ids: readonly string[], read: (id: string) => HeldRoster | undefined, query: RosterQuery): RosterPage {
  assertRosterQuery(query);
  const low = indexAfter(ids, query.after);
  const needle = query.id_contains?.toLowerCase();
  const entries: RosterEntry[] = [];
  for (let i = low; i < ids.length; i++) {
    const id = ids[i] as string;
    if (needle !== undefined && !id.toLowerCase().includes(needle)) continue;
    const held = read(id);
    if (held === undefined) continue;
    if (query.roster_contains !== undefined && !(held.rosterJson ?? '').includes(query.roster_contains)) continue;
    if (entries.length === query.limit) return { entries, more: true };
    entries.push({ agent_id: id, version: held.version, roster: held.rosterJson === undefined ? null : (JSON.parse(held.rosterJson) as unknown) });
  }
  return { entries, more: false };
}

/** Whether a roster entry's JSON lists `hash` in its `trigger_hashes` (hashes are base64url: no escapes, no `]`). */
export function rosterListsHash(rosterJson: string | undefined, hash: string): boolean {
  if (rosterJson === undefined) return false;
  const start = rosterJson.indexOf('"trigger_hashes":[');
  if (start < 0) return false;
  const list = rosterJson.slice(start + '"trigger_hashes":['.length, rosterJson.indexOf(']', start));
  return list.split(',').includes(JSON.stringify(hash));
}

/** `agentForTriggerHash` by a scan (the embedded stores: their runtime keeps its own index). */
export function agentListingHash(ids: readonly string[], read: (id: string) => HeldRoster | undefined, hash: string): string | null {
  for (const id of ids) {
    if (rosterListsHash(read(id)?.rosterJson, hash)) return id;
  }
  return null;
}
