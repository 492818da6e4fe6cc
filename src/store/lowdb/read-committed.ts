import { join, resolve } from 'node:path';
import type { AgentEvent } from '../../domain/index.js';
import { AgentFiles } from './agent-files.js';
import { committedDoc, committedEvents } from './committed-reads.js';
import { DirectorySyncer } from './directory-syncer.js';
import { OpenFiles } from './open-files.js';
import type { PersistedAgent } from './records.js';
import type { IndexEntry } from './roster-index.js';
import { Uncheckpointed } from './uncheckpointed.js';
import { recoverIndex } from './wal-recovery.js';
import { WriteAheadLog } from './write-ahead-log.js';

/**
 * A read-only view of a lowdb data directory's committed state: `roster.tsv`, the write-ahead log
 * laid over it and the agents' files, as the next open would recover them, without taking
 * `writer.lock` or writing anything. For tests and tools that inspect a directory a store is
 * writing (what it has acknowledged) or that a killed process left.
 */
export class CommittedView {
  private constructor(
    private readonly files: AgentFiles,
    private readonly entries: Map<string, IndexEntry>,
    private readonly uncheckpointed: Uncheckpointed,
  ) {}

  /** Reads the directory's index and log as they are now; later commits need a new view. */
  static async read(dataDir: string): Promise<CommittedView> {
    const location = resolve(dataDir);
    const directories = new DirectorySyncer();
    const files = new AgentFiles(join(location, 'agents'), new OpenFiles(), directories);
    const recovered = await recoverIndex({
      rosterPath: join(location, 'roster.tsv'),
      files,
      wal: new WriteAheadLog(location, directories),
      repair: false,
      cutTornTails: false,
    });
    const uncheckpointed = new Uncheckpointed();
    uncheckpointed.replace(recovered.uncheckpointed);
    return new CommittedView(files, recovered.entries, uncheckpointed);
  }

  /** Agents with at least one committed version, sorted. */
  agentIds(): string[] {
    return [...this.entries.keys()].sort();
  }

  /**
   * The agent's committed record, or `null` when it has none. A checkpoint that finished after
   * this view was read may make it newer than the view's index, never older.
   */
  agent(agent_id: string): Promise<PersistedAgent | null> {
    if (!this.entries.has(agent_id)) return Promise.resolve(null);
    return committedDoc(this.files, this.uncheckpointed, agent_id);
  }

  /** The committed events `from_seq..to_seq`, ascending. */
  events(agent_id: string, from_seq: number, to_seq: number): Promise<AgentEvent[]> {
    const seqs: number[] = [];
    for (let seq = Math.max(from_seq, 1); seq <= to_seq; seq += 1) seqs.push(seq);
    return committedEvents(this.files, this.uncheckpointed, agent_id, seqs);
  }
}
