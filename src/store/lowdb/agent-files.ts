import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DomainError } from '../../domain/index.js';
import type { OpenFiles } from './open-files.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { AgentEventLog } from './event-log.js';
import type { EventLine } from './event-log.js';
import { fsyncFile, isNotFound, replaceFile, storeError } from './fs-util.js';
import { AgentDocRecord } from './records.js';
import type { PersistedAgent } from './records.js';

/** An agent's state after a commit, as text ready to write. */
export interface AgentWrite {
  version: number;
  last_event_seq: number;
  /**
   * The document's JSON, made when first asked for (by a checkpoint round or a read): a commit
   * whose log record holds only the changed fields does not serialize the whole document, and
   * most of an agent's versions are superseded before a round writes one.
   */
  docJson: () => string;
  rosterJson: string | undefined;
}

/** `{version, last_event_seq, doc, roster?}` from already serialized parts (nothing is stringified twice). */
function docFileText(write: AgentWrite): string {
  const roster = write.rosterJson === undefined ? '' : `,"roster":${write.rosterJson}`;
  return `{"version":${write.version},"last_event_seq":${write.last_event_seq},"doc":${write.docJson()}${roster}}`;
}

/**
 * `agents/<agent_id>/doc.json` and `agents/<agent_id>/events/`: checkpoints of the write-ahead log,
 * written and fsynced by checkpoint rounds (and written by recovery). Nothing here is cached per agent.
 */
export class AgentFiles {
  constructor(
    readonly agentsDir: string,
    private readonly handles: OpenFiles,
    private readonly directories: DirectorySyncer,
  ) {}

  dir(agent_id: string): string {
    return join(this.agentsDir, agent_id);
  }

  docPath(agent_id: string): string {
    return join(this.agentsDir, agent_id, 'doc.json');
  }

  eventLog(agent_id: string): AgentEventLog {
    return new AgentEventLog(join(this.agentsDir, agent_id, 'events'), agent_id, this.handles, this.directories);
  }

  /** doc.json as last written, or `null` when it does not exist. */
  async readDoc(agent_id: string): Promise<PersistedAgent | null> {
    const path = this.docPath(agent_id);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if (isNotFound(err)) return null;
      throw storeError(`reading ${path}`, err);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new DomainError('store_unavailable', `${path} is not valid JSON`);
    }
    try {
      return AgentDocRecord.parse(raw);
    } catch (err) {
      throw storeError(`${path} has an unexpected shape`, err);
    }
  }

  /**
   * Appends the events, then replaces doc.json: a reader never sees a doc ahead of its events.
   * Checkpoints and recovery call it; commits never do (they are durable in the write-ahead log).
   */
  async writeState(agent_id: string, write: AgentWrite, lines: EventLine[]): Promise<void> {
    const log = this.eventLog(agent_id);
    try {
      await this.writeFiles(agent_id, log, write, lines);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // The agent's first checkpoint (or its first events): the directories are made then, not
      // checked on every round, where a thousand mkdir calls cost more than the writes (a
      // missing directory fails the append's open or the temp file's creation, before anything
      // is written). Off the main thread: a round that meets a thousand new agents made them
      // synchronously in ~1 s, and every commit waited behind it.
      await mkdir(lines.length > 0 ? log.dir : this.dir(agent_id), { recursive: true });
      await this.writeFiles(agent_id, log, write, lines);
    }
  }

  private async writeFiles(agent_id: string, log: AgentEventLog, write: AgentWrite, lines: EventLine[]): Promise<void> {
    if (lines.length > 0) log.append(lines);
    // Replaced whole, never rewritten in place: other processes read doc.json while it is written.
    await replaceFile(this.docPath(agent_id), docFileText(write));
  }

  /**
   * Makes what `writeState` left durable: the segments holding `from_seq..last_event_seq`,
   * doc.json and the directory entries (the caller syncs `agents/` once for all agents).
   */
  async sync(agent_id: string, from_seq: number, last_event_seq: number): Promise<void> {
    const log = this.eventLog(agent_id);
    if (from_seq <= last_event_seq) {
      await log.sync(from_seq, last_event_seq);
      await this.directories.sync(log.dir);
    }
    await fsyncFile(this.docPath(agent_id));
    await this.directories.sync(this.dir(agent_id));
  }
}
