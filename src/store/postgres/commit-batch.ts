import { DomainError } from '../../domain/index.js';
import type { AgentEvent } from '../../domain/index.js';
import { assertExpectedVersion, eventId } from '../shared/commit-rules.js';
import type { CommitFence } from '../shared/commit-rules.js';
import { DocJson } from '../shared/doc-json.js';
import type { DocField } from '../shared/doc-json.js';
import { KeyedGroupQueue } from '../shared/keyed-group-queue.js';
import { toJson } from '../shared/to-json.js';
import type { CommitResult, NewEvent } from '../store.js';
import type { Row, SqlQuery } from './sql-client.js';

/**
 * What a commit writes of its document: a plain record as its top-level fields, all of them
 * (`record`: the others are deleted) or only those not shared with the version it replaces
 * (`patch`); any other JSON value whole (`value`).
 */
export type DocWrite = { mode: 'patch' | 'record'; fields: DocField[] } | { mode: 'value'; json: string };

const MODE = { patch: 0, record: 1, value: 2 } as const;

/** A commit as `commit_batch` takes it: its document, roster entry and payloads serialized. */
export interface PreparedCommit {
  agent_id: string;
  expected_version: number | null;
  fence: CommitFence;
  doc: DocWrite;
  /** `undefined` keeps the previous entry. */
  rosterJson: string | undefined;
  events: Array<{ type: NewEvent['type']; ts: string; payloadJson: string }>;
}

/** Queued with its document as given (the store owns it): serialized in the batch, against the agent's last committed one. */
export interface QueuedCommit extends Omit<PreparedCommit, 'doc'> {
  doc: unknown;
  resolve(result: CommitResult): void;
  reject(err: unknown): void;
}

/**
 * An agent's last document committed through this store instance, the base of its next patch, and
 * how many `FieldDelta`s each field's row holds since it was last written whole (by JSON name).
 */
interface CommittedDoc {
  version: number;
  doc: unknown;
  deltas: ReadonlyMap<string, number>;
}

/**
 * Deltas a field's row holds at most (schema migration 6): the next change writes it whole. A
 * delta is a message or a record and a few slices, so the row stays well under the field's size,
 * and a load applies at most this many.
 */
export const MAX_FIELD_DELTAS = 16;

/** Commits per call at most: a few MiB of parameters, and a batch still lands in tens of ms. */
export const MAX_BATCH = 1000;
/**
 * Batches in flight at once, over disjoint agents (each on its own pooled connection): one batch
 * at a time left the node idle 40% of a durable prompt load, waiting on the round trip and the
 * WAL flush (bench/BENCHMARKS.md, stop 26).
 */
export const BATCHES_IN_FLIGHT = 2;

/** SQLSTATEs after which the whole transaction rolled back and running it again is safe. */
const RETRYABLE = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

/**
 * The `commit_batch` arguments for a batch (see `schema.ts`): numbers as arrays, strings joined
 * by `\n` (no JSON text, agent id, type or time holds a raw newline).
 */
export function batchArguments(commits: readonly PreparedCommit[]): unknown[] {
  const seen = new Map<string, number>();
  const rounds: number[] = [];
  const e_round: number[] = [];
  const e_ord: number[] = [];
  const e_agent: string[] = [];
  const e_ts: string[] = [];
  const e_type: string[] = [];
  const e_payload: string[] = [];
  const f_round: number[] = [];
  const f_ord: number[] = [];
  const f_agent: string[] = [];
  const f_name: string[] = [];
  const f_json: string[] = [];
  const f_delta: boolean[] = [];
  for (const commit of commits) {
    const round = (seen.get(commit.agent_id) ?? 0) + 1;
    seen.set(commit.agent_id, round);
    rounds.push(round);
    if (commit.doc.mode !== 'value') {
      for (const field of commit.doc.fields) {
        f_round.push(round);
        f_ord.push(field.ord);
        f_agent.push(commit.agent_id);
        f_name.push(field.name);
        f_json.push(field.json);
        f_delta.push(field.delta);
      }
    }
    commit.events.forEach((event, i) => {
      e_round.push(round);
      e_ord.push(i + 1);
      e_agent.push(commit.agent_id);
      e_ts.push(event.ts);
      e_type.push(event.type);
      e_payload.push(event.payloadJson);
    });
  }
  const joined = (values: string[]): string | null => (values.length === 0 ? null : values.join('\n'));
  return [
    rounds,
    commits.map((c) => c.expected_version),
    commits.map((c) => (c.fence.kind === 'store' ? c.fence.token : null)),
    commits.map((c) => (c.fence.kind === 'agent' ? c.fence.token : null)),
    commits.map((c) => c.events.length),
    commits.map((c) => MODE[c.doc.mode]),
    commits.map((c) => c.agent_id).join('\n'),
    commits.map((c) => (c.doc.mode === 'value' ? c.doc.json : '')).join('\n'),
    commits.map((c) => c.rosterJson ?? '').join('\n'),
    f_round,
    f_ord,
    joined(f_agent),
    joined(f_name),
    joined(f_json),
    f_delta,
    e_round,
    e_ord,
    joined(e_agent),
    joined(e_ts),
    joined(e_type),
    joined(e_payload),
  ];
}

export function commitBatchCall(s: string): string {
  const params = batchArguments([]).map((_, i) => `$${i + 1}`);
  return `SELECT idx, outcome, version, base_seq, current_version, current_token, current_holder FROM ${s}.commit_batch(${params.join(', ')})`;
}

/** What a commit's row says: its result, or the error it fails alone with. */
function outcome(commit: PreparedCommit, row: Row | undefined): CommitResult | DomainError {
  if (row === undefined) return new DomainError('store_unavailable', `the commit batch returned no outcome for agent ${commit.agent_id}`);
  if (row['outcome'] === 'ok') {
    const version = Number(row['version']);
    const base = Number(row['base_seq']);
    const events = commit.events.map(
      (event, i): AgentEvent => ({
        id: eventId(commit.agent_id, base + i + 1),
        event_seq: base + i + 1,
        ts: event.ts,
        agent_id: commit.agent_id,
        type: event.type,
        payload: JSON.parse(event.payloadJson) as Record<string, unknown>,
      }),
    );
    return { version, events };
  }
  if (row['outcome'] === 'fenced') {
    const current = row['current_token'] === null ? null : Number(row['current_token']);
    const lease = commit.fence.kind === 'store' ? 'the write lease' : `agent ${commit.agent_id}'s lease`;
    return new DomainError(
      'lease_lost',
      current === null
        ? `${lease} no longer exists (or was never acquired)`
        : `fencing token ${commit.fence.token} is not the current token of ${lease} (held by ${String(row['current_holder'])} with token ${current})`,
      { fencing_token: commit.fence.token, ...(current === null ? {} : { current_fencing_token: current, holder: row['current_holder'] }) },
    );
  }
  const current = row['current_version'] === null ? null : Number(row['current_version']);
  try {
    assertExpectedVersion(commit.agent_id, current, commit.expected_version);
  } catch (err) {
    return err as DomainError;
  }
  // The snapshot saw the expected version, yet the write lost: a concurrent commit got there first.
  return new DomainError('version_conflict', `agent ${commit.agent_id} changed concurrently`, { current_version: current });
}

/**
 * Group commit across agents: every commit queued while the calls run joins a next batch (up to
 * `MAX_BATCH`; `BATCHES_IN_FLIGHT` calls at once over disjoint agents, so an agent's commits land in
 * order), and a batch is ONE `commit_batch` call: one round trip, one transaction, one WAL
 * flush. A stale or fenced commit fails alone; a failed call fails its batch with
 * `store_unavailable` (its outcome is then unknown: the caller reloads the agent).
 *
 * A document is written as the fields that are not the very objects of the agent's last document
 * committed here, when the commit replaces that version (the compare-and-set makes sure the
 * database holds it); otherwise whole. Most commits change a few fields of a document of kilobytes.
 */
export class CommitBatcher {
  private readonly queue = new KeyedGroupQueue<QueuedCommit & { key: string }>((batch) => this.flush(batch), { maxBatch: MAX_BATCH, maxInFlight: BATCHES_IN_FLIGHT });
  private readonly call: string;
  /** One per agent (see DocJson), dropped with `forget`. */
  private readonly docJsons = new Map<string, DocJson>();
  private readonly committed = new Map<string, CommittedDoc>();

  constructor(
    private readonly sql: SqlQuery,
    s: string,
    private readonly failed: (doing: string, err: unknown) => DomainError,
  ) {
    this.call = commitBatchCall(s);
  }

  push(commit: Omit<QueuedCommit, 'resolve' | 'reject'>): Promise<CommitResult> {
    return new Promise((resolve, reject) => this.queue.push({ ...commit, key: commit.agent_id, resolve, reject }));
  }

  /** The agent's next commit writes its whole document. */
  forget(agent_id: string): void {
    this.committed.delete(agent_id);
    this.docJsons.delete(agent_id);
  }

  /** Resolves once every commit queued so far is settled. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /**
   * What the commit writes of its document; the first commit of an agent in a batch may patch,
   * writing a changed list or record as a delta while its row holds fewer than `MAX_FIELD_DELTAS`.
   */
  private docWrite(commit: QueuedCommit, first: boolean): DocWrite {
    const base = first ? this.committed.get(commit.agent_id) : undefined;
    const json = this.docJsonOf(commit.agent_id);
    return toJson('document', (): DocWrite => {
      if (base !== undefined && base.version === commit.expected_version) {
        const changed = json.fields(commit.doc, base.doc, (name) => (base.deltas.get(name) ?? 0) < MAX_FIELD_DELTAS);
        if (changed !== null) return { mode: 'patch', fields: changed };
      }
      const fields = json.fields(commit.doc);
      return fields === null ? { mode: 'value', json: json.stringify(commit.doc ?? null) } : { mode: 'record', fields };
    });
  }

  private docJsonOf(agent_id: string): DocJson {
    let json = this.docJsons.get(agent_id);
    if (json === undefined) this.docJsons.set(agent_id, (json = new DocJson()));
    return json;
  }

  private async flush(queued: QueuedCommit[]): Promise<void> {
    const batch: QueuedCommit[] = [];
    const prepared: PreparedCommit[] = [];
    const seen = new Set<string>();
    for (const commit of queued) {
      try {
        prepared.push({ ...commit, doc: this.docWrite(commit, !seen.has(commit.agent_id)) });
        batch.push(commit);
        seen.add(commit.agent_id);
      } catch (err) {
        // A document that is not JSON fails its commit alone.
        commit.reject(err);
      }
    }
    if (batch.length === 0) return;
    const args = batchArguments(prepared);
    let rows: Row[] | undefined;
    for (let attempt = 1; rows === undefined; attempt += 1) {
      try {
        rows = await this.sql.query(this.call, args);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (attempt < ATTEMPTS && typeof code === 'string' && RETRYABLE.has(code)) continue;
        const error = this.failed(`committing a batch of ${batch.length} (its outcome is unknown: reload the agents)`, err);
        for (const commit of batch) commit.reject(error);
        return;
      }
    }
    const byIdx = new Map<number, Row>(rows.map((row) => [Number(row['idx']), row]));
    batch.forEach((commit, i) => {
      const result = outcome(prepared[i] as PreparedCommit, byIdx.get(i + 1));
      if (result instanceof DomainError) {
        commit.reject(result);
        return;
      }
      this.committed.set(commit.agent_id, { version: result.version, doc: commit.doc, deltas: deltasAfter(prepared[i] as PreparedCommit, this.committed.get(commit.agent_id)) });
      commit.resolve(result);
    });
  }
}

/** The deltas each field's row holds once `commit` is written over `base` (a whole write holds none). */
function deltasAfter(commit: PreparedCommit, base: CommittedDoc | undefined): ReadonlyMap<string, number> {
  if (commit.doc.mode !== 'patch' || base === undefined) return new Map();
  const deltas = new Map(base.deltas);
  for (const field of commit.doc.fields) {
    if (field.delta) deltas.set(field.name, (deltas.get(field.name) ?? 0) + 1);
    else deltas.delete(field.name);
  }
  return deltas;
}
