import { DomainError } from '../../domain/index.js';

/** What the store keeps in memory per agent, however many agents there are: no document. */
export interface IndexEntry {
  version: number;
  last_event_seq: number;
  /** The roster entry as JSON; `undefined` while no commit carried one. */
  rosterJson: string | undefined;
}

const HEADER = 'holon-roster 1';

/**
 * Every agent's version, last event and roster entry. In memory it is the truth for commits'
 * compare-and-set and for `listRoster`/`listAgentIds`; on disk (`roster.tsv`) it is the checkpoint
 * the write-ahead log is replayed onto. Entries are replaced, never mutated, so a copy of the map
 * is a consistent snapshot.
 *
 * File: a header line, then `<agent_id>\t<version>\t<last_event_seq>\t<roster JSON or empty>` per
 * agent. Agent ids have no tabs and JSON text has no raw tabs or newlines, so a line splits
 * without parsing the roster.
 */
export class RosterIndex {
  private entries = new Map<string, IndexEntry>();
  private sorted: string[] | null = null;

  get size(): number {
    return this.entries.size;
  }

  get(agent_id: string): IndexEntry | undefined {
    return this.entries.get(agent_id);
  }

  set(agent_id: string, entry: IndexEntry): void {
    if (!this.entries.has(agent_id)) this.sorted = null;
    this.entries.set(agent_id, entry);
  }

  /** Sorted agent ids (the array is shared: do not mutate it). */
  ids(): readonly string[] {
    this.sorted ??= [...this.entries.keys()].sort();
    return this.sorted;
  }

  snapshot(): Map<string, IndexEntry> {
    return new Map(this.entries);
  }

  replace(entries: Map<string, IndexEntry>): void {
    this.entries = entries;
    this.sorted = null;
  }

  static serialize(entries: Map<string, IndexEntry>): string {
    const lines = [HEADER];
    for (const [agent_id, entry] of entries) {
      lines.push(`${agent_id}\t${entry.version}\t${entry.last_event_seq}\t${entry.rosterJson ?? ''}`);
    }
    return `${lines.join('\n')}\n`;
  }

  static parse(text: string, path: string): Map<string, IndexEntry> {
    const lines = text.split('\n');
    if (lines[0] !== HEADER || lines.at(-1) !== '') throw damaged(path, 'header or end');
    const entries = new Map<string, IndexEntry>();
    for (let i = 1; i < lines.length - 1; i += 1) {
      const line = lines[i] ?? '';
      const a = line.indexOf('\t');
      const b = line.indexOf('\t', a + 1);
      const c = line.indexOf('\t', b + 1);
      const version = Number(line.slice(a + 1, b));
      const last_event_seq = Number(line.slice(b + 1, c));
      if (a <= 0 || c < 0 || !Number.isInteger(version) || version <= 0 || !Number.isInteger(last_event_seq) || last_event_seq < 0) {
        throw damaged(path, `line ${i + 1}`);
      }
      const roster = line.slice(c + 1);
      entries.set(line.slice(0, a), { version, last_event_seq, rosterJson: roster === '' ? undefined : roster });
    }
    return entries;
  }
}

function damaged(path: string, where: string): DomainError {
  return new DomainError('store_unavailable', `${path} is damaged (${where})`);
}
