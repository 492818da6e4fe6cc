import type { AgentEvent } from '../../domain/index.js';
import { DomainError } from '../../domain/index.js';
import { assertExpectedVersion, eventId } from '../shared/commit-rules.js';
import { assertFence } from '../shared/lease-rules.js';
import type { CommitResult, NewEvent } from '../store.js';
import { once } from './lazy-text.js';
import type { AgentWrite } from './agent-files.js';
import { toJson } from '../shared/to-json.js';
import { DocJson } from '../shared/doc-json.js';
import { writeCheckpoint } from './checkpoint.js';
import type { CheckpointTargets, DirtyAgents } from './checkpoint.js';
import type { EventLine } from './event-log.js';
import { storeError } from './fs-util.js';
import { GroupQueue } from '../shared/group-queue.js';
import type { LeaseFile } from './lease-file.js';
import type { IndexEntry, RosterIndex } from './roster-index.js';
import type { Uncheckpointed } from './uncheckpointed.js';
import { encodeFrames } from './wal-frame.js';

/** A commit whose document, roster entry and payloads are already serialized (bad input fails before queueing). */
export interface PreparedCommit {
  agent_id: string;
  expected_version: number | null;
  fencing_token: number;
  /** The document itself (the store owns it): serialized in the batch, whole or as the fields changed since the agent's last commit. */
  doc: unknown;
  /** `undefined` keeps the previous entry. */
  rosterJson: string | undefined;
  events: Array<{ type: NewEvent['type']; ts: string; payloadJson: string }>;
  resolve(result: CommitResult): void;
  reject(err: unknown): void;
}

interface CheckpointRequest {
  checkpoint: true;
  resolve(): void;
  reject(err: unknown): void;
}

type Job = PreparedCommit | CheckpointRequest;

export interface WriterContext extends CheckpointTargets {
  index: RosterIndex;
  lease: LeaseFile;
  /** Where acknowledged commits wait for the next checkpoint round to write them to the files. */
  uncheckpointed: Uncheckpointed;
  /** Before the first write to an agent in this process: its files end at its `last_event_seq`; `null` once they do. */
  ensureRepaired(agent_id: string): Promise<void> | null;
  /** Whether this instance may checkpoint (delete log files): it is the directory's only writer. */
  mayCheckpoint(): Promise<boolean>;
  /** Log bytes after which a checkpoint starts by itself. */
  checkpointBytes: number;
  /** Agents with uncheckpointed commits after which a checkpoint starts by itself. */
  checkpointAgents: number;
}

/** An agent's last logged document, the base its next record's patch is laid over. */
interface LoggedDoc {
  version: number;
  doc: unknown;
  /** Serializes the agent's documents and patches, reusing the JSON of what its earlier commits shared (one per agent: see DocJson). */
  json: DocJson;
}

interface Accepted {
  commit: PreparedCommit;
  write: AgentWrite;
  /** The record's `p` and `q` (what changed since the previous version), when that version's document is known; else the record carries the whole document. */
  patchJson: string | null;
  lines: EventLine[];
  events: AgentEvent[];
}

/**
 * Group commit across agents. Every commit queued while the writer is idle or busy joins the next
 * batch; a batch reads the lease once, checks each commit in order (fence, then compare-and-set
 * against the state the previous one produced), appends one record per accepted commit to the
 * write-ahead log with ONE fdatasync, and resolves: the agents' files are not touched, the commits
 * wait in `Uncheckpointed` until a checkpoint round (between batches' log appends, then off the
 * commit path) writes them.
 */
export class CommitWriter {
  private readonly queue = new GroupQueue<Job>((batch) => this.flush(batch));
  private dirty: DirtyAgents = new Map();
  private rosterStale = false;
  private rounds: Promise<void> = Promise.resolve();
  private roundQueued = false;
  /** Set when a write failed after the log may have taken it: memory and disk may disagree until reopen. */
  private failure: DomainError | null = null;
  /**
   * Each agent's document as of its last logged record, while the agent is resident: a record
   * then logs only what changed (`WalRecord.p` and `q`), which recovery lays over the version
   * before. Most commits change a few fields of a document of tens of kilobytes.
   */
  private logged = new Map<string, LoggedDoc>();
  /** The running round's file writes (settled, never rejecting), while one runs. */
  private writing: Promise<void> | null = null;

  constructor(private readonly ctx: WriterContext) {}

  push(commit: PreparedCommit): void {
    if (this.failure !== null) commit.reject(this.failure);
    else this.queue.push(commit);
  }

  /** What recovery repaired and the next checkpoint must make durable. */
  reset(dirty: DirtyAgents, rosterStale: boolean): void {
    this.dirty = dirty;
    this.rosterStale = rosterStale;
    this.logged = new Map();
  }

  /** The agent leaves memory: its next record carries its whole document. */
  forget(agent_id: string): void {
    this.logged.delete(agent_id);
  }

  /** Agents whose files are not durable or not current yet. */
  get dirtyAgents(): number {
    const pending = this.ctx.uncheckpointed;
    return pending.size + [...this.dirty.keys()].filter((agent_id) => pending.write(agent_id) === undefined).length;
  }

  /** Resolves once every commit queued so far is settled and no checkpoint round is running. */
  async idle(): Promise<void> {
    await this.queue.idle();
    await this.rounds.catch(() => undefined);
  }

  /** Runs a checkpoint round after the commits queued so far (rounds never overlap). */
  checkpoint(): Promise<void> {
    const round = this.rounds
      .catch(() => undefined)
      .then(() => new Promise<void>((resolve, reject) => this.queue.push({ checkpoint: true, resolve, reject })));
    this.rounds = round;
    return round;
  }

  private async flush(batch: Job[]): Promise<void> {
    const commits: PreparedCommit[] = [];
    for (const job of batch) {
      if ('checkpoint' in job) await this.startRound(job);
      else commits.push(job);
    }
    // Back-pressure: commits outrunning the rounds would hold ever more agents in memory.
    if (commits.length > 0 && this.writing !== null && this.ctx.uncheckpointed.openSize >= 2 * this.ctx.checkpointAgents) await this.writing;
    if (commits.length > 0) await this.write(commits);
    const due = this.ctx.wal.bytesSinceRotation >= this.ctx.checkpointBytes || this.ctx.uncheckpointed.openSize >= this.ctx.checkpointAgents;
    if (due && !this.roundQueued) {
      this.roundQueued = true;
      // A failed round leaves its log files for the next one; nothing is lost by ignoring it here.
      this.checkpoint()
        .catch(() => undefined)
        .finally(() => {
          this.roundQueued = false;
        });
    }
  }

  /** Between two batches: every record in the rotated files is in the index and in `Uncheckpointed`. */
  private async startRound(request: CheckpointRequest): Promise<void> {
    try {
      // After a failed write the index may lag the log: only a reopen's recovery may retire it.
      if (this.failure !== null || !(await this.ctx.mayCheckpoint())) {
        request.resolve();
        return;
      }
      const walFiles = await this.ctx.wal.rotate();
      if (walFiles.length === 0 && this.dirty.size === 0 && !this.rosterStale && this.ctx.uncheckpointed.size === 0) {
        request.resolve();
        return;
      }
      const dirty = this.dirty;
      this.dirty = new Map();
      this.rosterStale = false;
      const capture = { walFiles, dirty, written: this.ctx.uncheckpointed.seal(), entries: this.ctx.index.snapshot() };
      const writing = writeCheckpoint(capture, this.ctx);
      this.writing = writing.catch(() => undefined);
      writing.then(
        () => {
          this.writing = null;
          this.ctx.uncheckpointed.settle();
          request.resolve();
        },
        (err: unknown) => {
          this.writing = null;
          this.ctx.wal.restore(walFiles);
          this.ctx.uncheckpointed.unseal();
          // The files may hold part of the round's events: writing them again could repeat lines,
          // so the store stops until a reopen repairs the files from the log.
          this.failure ??= storeError('checkpointing; the store must be reopened', err);
          request.reject(this.failure);
        },
      );
    } catch (err) {
      request.reject(storeError('checkpointing', err));
    }
  }

  private async write(commits: PreparedCommit[]): Promise<void> {
    const agents = [...new Set(commits.map((c) => c.agent_id))];
    const unrepaired = new Map<string, unknown>();
    const repairs: Array<Promise<unknown>> = [];
    for (const agent_id of agents) {
      const repair = this.ctx.ensureRepaired(agent_id);
      if (repair !== null) repairs.push(repair.catch((err: unknown) => unrepaired.set(agent_id, err)));
    }
    if (repairs.length > 0) await Promise.all(repairs);
    const lease = this.ctx.lease.readForFence();
    const states = new Map<string, AgentWrite>();
    const docs = new Map<string, LoggedDoc>();
    const byAgent = new Map<string, Accepted[]>();
    for (const commit of commits) {
      const { agent_id } = commit;
      try {
        if (unrepaired.has(agent_id)) throw storeError(`repairing agent ${agent_id}`, unrepaired.get(agent_id));
        assertFence(lease, commit.fencing_token, this.ctx.lease.holderOf(commit.fencing_token));
        const current = states.get(agent_id) ?? this.ctx.index.get(agent_id) ?? null;
        assertExpectedVersion(agent_id, current?.version ?? null, commit.expected_version);
        const base = docs.get(agent_id) ?? this.logged.get(agent_id);
        const docJson = base?.json ?? new DocJson();
        const patch = base !== undefined && base.version === (current?.version ?? 0) ? toJson('document', () => docJson.patch(commit.doc, base.doc)) : null;
        const patchJson = patch === null ? null : `"p":${patch.fields}${patch.deltas === null ? '' : `,"q":${patch.deltas}`}`;
        const wholeJson = once(() => toJson('document', () => docJson.stringify(commit.doc)));
        // A record without a patch carries the whole document: a document that is not JSON fails here, alone.
        if (patchJson === null) wholeJson();
        const accepted = accept(commit, current, wholeJson, patchJson);
        states.set(agent_id, accepted.write);
        docs.set(agent_id, { version: accepted.write.version, doc: commit.doc, json: docJson });
        const list = byAgent.get(agent_id);
        if (list === undefined) byAgent.set(agent_id, [accepted]);
        else list.push(accepted);
      } catch (err) {
        commit.reject(err);
      }
    }
    if (byAgent.size === 0) return;
    const all = [...byAgent.values()].flat();

    try {
      await this.ctx.wal.append(encodeFrames(all.map(walPayload)));
    } catch (err) {
      // The log may hold these commits (they land at the next open) while memory does not.
      this.failure = storeError('writing a commit batch; the store must be reopened', err);
      for (const { commit } of all) commit.reject(this.failure);
      return;
    }
    for (const [agent_id, logged] of docs) if (byAgent.has(agent_id)) this.logged.set(agent_id, logged);
    for (const [agent_id, list] of byAgent) {
      const last = list.at(-1) as Accepted;
      const { version, last_event_seq, rosterJson } = last.write;
      this.ctx.index.set(agent_id, { version, last_event_seq, rosterJson });
      this.ctx.uncheckpointed.add(agent_id, last.write, list.flatMap((a) => a.lines));
    }
    for (const { commit, write, events } of all) commit.resolve({ version: write.version, events });
  }
}

function accept(commit: PreparedCommit, current: IndexEntry | null, docJson: () => string, patchJson: string | null): Accepted {
  const { agent_id } = commit;
  const last = current?.last_event_seq ?? 0;
  const events: AgentEvent[] = [];
  const lines: EventLine[] = [];
  for (const prepared of commit.events) {
    const event_seq = last + events.length + 1;
    const event: AgentEvent = {
      id: eventId(agent_id, event_seq),
      event_seq,
      ts: prepared.ts,
      agent_id,
      type: prepared.type,
      payload: JSON.parse(prepared.payloadJson),
    };
    events.push(event);
    lines.push({ event_seq, line: eventLine(event, prepared.payloadJson) });
  }
  const write: AgentWrite = {
    version: (current?.version ?? 0) + 1,
    last_event_seq: last + lines.length,
    docJson,
    rosterJson: commit.rosterJson ?? current?.rosterJson,
  };
  return { commit, write, patchJson, lines, events };
}

/** A `WalRecord` built from the serialized parts. */
function walPayload({ commit, write, patchJson, lines }: Accepted): string {
  const roster = write.rosterJson === undefined ? '' : `,"r":${write.rosterJson}`;
  const events = lines.map((l) => l.line).join(',');
  const doc = patchJson ?? `"d":${write.docJson()}`;
  return `{"a":${JSON.stringify(commit.agent_id)},"v":${write.version},"s":${write.last_event_seq},${doc}${roster},"e":[${events}]}`;
}

/** Serialized by hand so each payload is stringified once (in `commit`, where bad input fails alone). */
function eventLine(event: AgentEvent, payloadJson: string): string {
  return `{"id":${JSON.stringify(event.id)},"event_seq":${event.event_seq},"ts":${JSON.stringify(event.ts)},"agent_id":${JSON.stringify(event.agent_id)},"type":${JSON.stringify(event.type)},"payload":${payloadJson}}`;
}
