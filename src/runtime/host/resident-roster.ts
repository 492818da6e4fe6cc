import type { AgentListEntry } from '../../domain/index.js';
import { indexAfter } from '../../store/shared/roster-query.js';
import { compactHash, type AgentRoster } from '../agent/roster.js';
import type { Page } from '../api.js';

/**
 * Every agent's latest committed roster entry, resident for all agents whether their cell is
 * loaded or not, and the capability token hash → agent index derived from the entries. Entries
 * are kept as JSON: a string is about half the heap of the parsed object, and it is what the
 * change check compares.
 */
export class ResidentRoster {
  private readonly entries = new Map<string, string>();
  private readonly byTokenHash = new Map<string, string>();
  /** Agents whose entry names stranded waits: `/readyz` reports them without reading every entry. */
  private readonly strandedAgents = new Set<string>();
  /** `ids()`, until an agent is added. */
  private sorted: string[] | null = null;
  /** `ids()` in lower case, index for index (what a search compares with), until an agent is added. */
  private lowered: string[] | null = null;

  /** The agent's recorded entry as JSON (what a commit compares its entry with). */
  json(agentId: string): string | undefined {
    return this.entries.get(agentId);
  }

  /** Records the entry a commit carried (or boot listed); `json` is its JSON when the caller already has it. */
  set(agentId: string, entry: AgentRoster, json = JSON.stringify(entry)): void {
    const previous = this.entries.get(agentId);
    // Most commits change the listing, not the capabilities: the old entry is parsed only when
    // its hashes differ from the new one's.
    if (previous === undefined || hashesText(previous) !== hashesText(json)) {
      for (const hash of this.get(agentId)?.trigger_hashes ?? []) {
        if (this.byTokenHash.get(hash) === agentId) this.byTokenHash.delete(hash);
      }
      for (const hash of entry.trigger_hashes) this.byTokenHash.set(hash, agentId);
    }
    if (previous === undefined) {
      this.sorted = null;
      this.lowered = null;
    }
    this.entries.set(agentId, json);
    if (entry.stranded) this.strandedAgents.add(agentId);
    else this.strandedAgents.delete(agentId);
  }

  /** Drops the agent's entry and its token hashes (a cluster node keeps only the agents it runs). */
  forget(agentId: string): void {
    const entry = this.get(agentId);
    if (entry === undefined) return;
    for (const hash of entry.trigger_hashes) {
      if (this.byTokenHash.get(hash) === agentId) this.byTokenHash.delete(hash);
    }
    this.entries.delete(agentId);
    this.strandedAgents.delete(agentId);
    this.sorted = null;
    this.lowered = null;
  }

  /** Every agent with stranded waits, and those waits. */
  stranded(): Array<{ agent_id: string; waits: NonNullable<AgentRoster['stranded']> }> {
    return [...this.strandedAgents].sort().map((agentId) => ({ agent_id: agentId, waits: this.get(agentId)?.stranded ?? [] }));
  }

  get(agentId: string): AgentRoster | undefined {
    const json = this.entries.get(agentId);
    // Only `set` writes the map, with entries the schema built.
    return json === undefined ? undefined : (JSON.parse(json) as AgentRoster);
  }

  /** The agent holding the active capability whose token hashes to `tokenHash` (hex). */
  agentForTokenHash(tokenHash: string): string | undefined {
    return this.byTokenHash.get(compactHash(tokenHash));
  }

  /** Every agent with an entry, sorted (the caller must not modify the array). */
  ids(): readonly string[] {
    this.sorted ??= [...this.entries.keys()].sort();
    return this.sorted;
  }

  /** ListAgents: a page of listings, from the entries alone (no document is read). */
  listing(after: string | undefined, limit: number, filter: RosterFilter = {}): Page<AgentListEntry> {
    const { ids, more } = this.page(after, limit, filter);
    const items: AgentListEntry[] = [];
    for (const id of ids) {
      const entry = this.get(id);
      if (entry) items.push({ agent_id: id, ...entry.listing });
    }
    const last = ids.at(-1);
    return { items, next_cursor: last !== undefined && more ? last : null };
  }

  /**
   * Up to `limit` ids after `after` (all from the first without it), in order, and whether more
   * follow; with a filter, only the ids containing `q` (any case) whose listing has `status`.
   * A filtered page scans on from the cursor: a substring test per id, and a parse only of the
   * entries whose JSON mentions the status (100,000 agents: a few milliseconds).
   */
  page(after: string | undefined, limit: number, filter: RosterFilter = {}): { ids: string[]; more: boolean } {
    const ids = this.ids();
    const low = indexAfter(ids, after);
    if (filter.q === undefined && filter.status === undefined) return { ids: ids.slice(low, low + limit), more: low + limit < ids.length };
    this.lowered ??= ids.map((id) => id.toLowerCase());
    const q = filter.q?.toLowerCase();
    const mention = filter.status === undefined ? undefined : `"status":"${filter.status}"`;
    const out: string[] = [];
    for (let i = low; i < ids.length; i++) {
      if (q !== undefined && !(this.lowered[i] as string).includes(q)) continue;
      const id = ids[i] as string;
      if (mention !== undefined) {
        const json = this.entries.get(id) as string;
        if (!json.includes(mention) || this.get(id)?.listing.status !== filter.status) continue;
      }
      if (out.length === limit) return { ids: out, more: true };
      out.push(id);
    }
    return { ids: out, more: false };
  }
}

export interface RosterFilter {
  q?: string | undefined;
  status?: string | undefined;
}

/**
 * The `"trigger_hashes":[…]` part of an entry's JSON (base64url hashes hold no `]`). Searched from
 * the end, where it sits (only the optional timer and stranded waits follow it); the key cannot
 * occur inside a string value, whose quotes JSON escapes.
 */
function hashesText(json: string): string {
  const start = json.lastIndexOf('"trigger_hashes":');
  return start < 0 ? '' : json.slice(start, json.indexOf(']', start) + 1);
}
