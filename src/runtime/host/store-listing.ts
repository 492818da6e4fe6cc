import type { AgentListEntry } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import { AgentRoster } from '../agent/roster.js';
import type { Page } from '../api.js';
import type { RosterFilter } from './resident-roster.js';

/**
 * `ListAgents` read from the store, page by page (a cluster node keeps no roster entry of the
 * agents it does not run: every node lists every agent as last committed, whichever node wrote
 * it). The store prefilters by substring, as `ResidentRoster.listing` does; the parsed entry
 * decides. A page is filled from further store pages when the exact status check drops some.
 */
export async function listingFromStore(store: Pick<Store, 'listRosterPage'>, after: string | undefined, limit: number, filter: RosterFilter = {}): Promise<Page<AgentListEntry>> {
  const items: AgentListEntry[] = [];
  const mention = filter.status === undefined ? undefined : `"status":"${filter.status}"`;
  let cursor = after;
  for (;;) {
    const page = await store.listRosterPage({ after: cursor, limit: limit - items.length, id_contains: filter.q, roster_contains: mention });
    for (const entry of page.entries) {
      cursor = entry.agent_id;
      const roster = AgentRoster.safeParse(entry.roster);
      if (!roster.success || (filter.status !== undefined && roster.data.listing.status !== filter.status)) continue;
      items.push({ agent_id: entry.agent_id, ...roster.data.listing });
    }
    if (!page.more) return { items, next_cursor: null };
    if (items.length === limit) return { items, next_cursor: cursor ?? null };
  }
}
