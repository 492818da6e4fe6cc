import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import type { AgentEvent } from '../../domain/index.js';
import { assertExpectedVersion, eventId } from '../shared/commit-rules.js';
import { assertFence } from '../shared/lease-rules.js';
import type { CommitResult, EventPage, NewEvent } from '../store.js';
import type { AppendHandles } from './append-handles.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { CachedLoad } from './cached-load.js';
import { DurableJsonFile } from './durable-json-file.js';
import { AgentEventLog } from './event-log.js';
import type { EventLine } from './event-log.js';
import { removeDeadTempFiles, storeError } from './fs-util.js';
import { GroupQueue } from './group-queue.js';
import type { LeaseFile } from './lease-file.js';
import { AgentDocRecord } from './records.js';
import type { PersistedAgent } from './records.js';

/** A commit whose document and payloads are already serialized (bad input fails before queueing). */
export interface PreparedCommit {
  expected_version: number | null;
  fencing_token: number;
  /** The document as JSON gives it back. */
  doc: unknown;
  /** As JSON gives it back; `undefined` keeps the previous entry. */
  roster: unknown;
  events: Array<{ type: NewEvent['type']; ts: string; payloadJson: string }>;
  resolve(result: CommitResult): void;
  reject(err: unknown): void;
}

export interface SlotContext {
  agentsDir: string;
  /** Bumped when this instance takes a new fencing token: cached state must be reloaded. */
  generation(): number;
  directories: DirectorySyncer;
  handles: AppendHandles;
  lease: LeaseFile;
}

/**
 * One agent in the lowdb store: its committed doc (kept in memory after the first load; this
 * process is the only writer), its event log and its commit queue. A flush checks every queued
 * commit in order (fence, then compare-and-set against the state the previous one produced), then
 * writes the accepted ones together: one append + fdatasync per touched segment, then one durable
 * doc.json write, which is the commit point.
 */
export class AgentSlot {
  private state: PersistedAgent | null = null;
  private readonly loader: CachedLoad;
  private directoriesDurable = false;
  private readonly dir: string;
  private readonly db: Low<PersistedAgent | null>;
  private readonly log: AgentEventLog;
  private readonly queue = new GroupQueue<PreparedCommit>((batch) => this.flush(batch));

  constructor(
    readonly agent_id: string,
    private readonly ctx: SlotContext,
  ) {
    this.dir = join(ctx.agentsDir, agent_id);
    this.db = new Low<PersistedAgent | null>(
      new DurableJsonFile<PersistedAgent | null>(
        join(this.dir, 'doc.json'),
        (raw) => AgentDocRecord.parse(raw),
        ctx.directories,
      ),
      null,
    );
    this.log = new AgentEventLog(join(this.dir, 'events'), agent_id, ctx.handles, ctx.directories);
    this.loader = new CachedLoad(
      () =>
        this.load().catch((err: unknown) => {
          throw storeError(`loading agent ${agent_id}`, err);
        }),
      () => ctx.generation(),
    );
  }

  /** The last committed state (never a queued or in-flight commit). */
  async committed(): Promise<PersistedAgent | null> {
    for (;;) {
      // Reads may refresh a stale cache only while no flush of this agent is queued or running.
      const loading = this.loader.ensure(this.queue.isIdle());
      await loading;
      // A failed flush may have forgotten the state meanwhile; then load again.
      if (this.loader.isCurrent(loading)) return this.state;
    }
  }

  /** `seqsFor` picks the page's seqs from the retained window `[oldest, newest]`. */
  async readEvents(seqsFor: (oldest: number, newest: number) => number[]): Promise<EventPage> {
    const newest_seq = (await this.committed())?.last_event_seq ?? 0;
    const oldest_seq = this.log.oldestSeq(newest_seq);
    try {
      return { events: await this.log.read(seqsFor(oldest_seq, newest_seq)), oldest_seq, newest_seq };
    } catch (err) {
      throw storeError(`reading events of agent ${this.agent_id}`, err);
    }
  }

  enqueue(commit: PreparedCommit): void {
    this.queue.push(commit);
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** No commit queued or being written: the slot may be dropped and rebuilt from disk later. */
  isIdle(): boolean {
    return this.queue.isIdle();
  }

  /** Reads doc.json and cuts the event log back to what it acknowledges. */
  private async load(): Promise<void> {
    await removeDeadTempFiles(this.dir);
    // Through the adapter: lowdb's `read` keeps its previous `data` when the file is missing.
    const state = await this.db.adapter.read();
    this.db.data = state;
    await this.log.recover(state?.last_event_seq ?? 0);
    this.state = state;
  }

  /** After a failed write the files may hold an unacknowledged tail: reload (and cut) before the next use. */
  private forget(): void {
    this.loader.forget();
    this.state = null;
  }

  private async flush(batch: PreparedCommit[]): Promise<void> {
    // The flush is this agent's only writer, so it may always refresh a stale cache.
    await this.loader.ensure(true);
    const lease = await this.ctx.lease.read();
    let state = this.state;
    const accepted: Array<{ commit: PreparedCommit; version: number; lines: EventLine[]; events: AgentEvent[] }> = [];
    for (const commit of batch) {
      try {
        assertFence(lease, commit.fencing_token, this.ctx.lease.holderOf(commit.fencing_token));
        assertExpectedVersion(this.agent_id, state?.version ?? null, commit.expected_version);
      } catch (err) {
        commit.reject(err);
        continue;
      }
      const last = state?.last_event_seq ?? 0;
      const events: AgentEvent[] = [];
      const lines: EventLine[] = [];
      for (const prepared of commit.events) {
        const event_seq = last + events.length + 1;
        const event: AgentEvent = {
          id: eventId(this.agent_id, event_seq),
          event_seq,
          ts: prepared.ts,
          agent_id: this.agent_id,
          type: prepared.type,
          payload: JSON.parse(prepared.payloadJson),
        };
        events.push(event);
        lines.push({ event_seq, line: eventLine(event, prepared.payloadJson) });
      }
      const roster = commit.roster === undefined ? state?.roster : commit.roster;
      state = { version: (state?.version ?? 0) + 1, last_event_seq: last + lines.length, doc: commit.doc, ...(roster === undefined ? {} : { roster }) };
      accepted.push({ commit, version: state.version, lines, events });
    }
    if (state === null || accepted.length === 0) return;

    try {
      await this.ensureDirectories();
      await this.log.append(accepted.flatMap((a) => a.lines));
      this.db.data = state;
      await this.db.write();
    } catch (err) {
      this.forget();
      const failure = storeError(`committing to agent ${this.agent_id}`, err);
      for (const { commit } of accepted) commit.reject(failure);
      return;
    }
    this.state = state;
    for (const { commit, version, events } of accepted) commit.resolve({ version, events });
  }

  /** Once per agent and process: the agent's directories exist and their entries are durable. */
  private async ensureDirectories(): Promise<void> {
    if (this.directoriesDurable) return;
    await mkdir(this.log.dir, { recursive: true });
    await Promise.all([this.ctx.directories.sync(this.ctx.agentsDir), this.ctx.directories.sync(this.dir)]);
    this.directoriesDurable = true;
  }
}

/** Serialized by hand so each payload is stringified once (in `commit`, where bad input fails alone). */
function eventLine(event: AgentEvent, payloadJson: string): string {
  return `{"id":${JSON.stringify(event.id)},"event_seq":${event.event_seq},"ts":${JSON.stringify(event.ts)},"agent_id":${JSON.stringify(event.agent_id)},"type":${JSON.stringify(event.type)},"payload":${payloadJson}}`;
}
