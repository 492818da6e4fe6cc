import { DomainError } from '../../domain/index.js';
import type { AgentEvent } from '../../domain/index.js';
import { assertExpectedVersion, eventId } from '../shared/commit-rules.js';
import type { CommitFence } from '../shared/commit-rules.js';
import { GroupQueue } from '../shared/group-queue.js';
import type { CommitResult, NewEvent } from '../store.js';
import type { Row, SqlQuery } from './sql-client.js';

/** A commit whose document, roster entry and payloads are serialized (bad input failed before queueing). */
export interface PreparedCommit {
  agent_id: string;
  expected_version: number | null;
  fence: CommitFence;
  docJson: string;
  /** `undefined` keeps the previous entry. */
  rosterJson: string | undefined;
  events: Array<{ type: NewEvent['type']; ts: string; payloadJson: string }>;
}

interface QueuedCommit extends PreparedCommit {
  resolve(result: CommitResult): void;
  reject(err: unknown): void;
}

/** Commits per call at most: a few MiB of parameters, and a batch still lands in tens of ms. */
export const MAX_BATCH = 1000;

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
  for (const commit of commits) {
    const round = (seen.get(commit.agent_id) ?? 0) + 1;
    seen.set(commit.agent_id, round);
    rounds.push(round);
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
    commits.map((c) => c.agent_id).join('\n'),
    commits.map((c) => c.docJson).join('\n'),
    commits.map((c) => c.rosterJson ?? '').join('\n'),
    e_round,
    e_ord,
    joined(e_agent),
    joined(e_ts),
    joined(e_type),
    joined(e_payload),
  ];
}

export function commitBatchCall(s: string): string {
  return `SELECT idx, outcome, version, base_seq, current_version, current_token, current_holder FROM ${s}.commit_batch(${Array.from({ length: 14 }, (_, i) => `$${i + 1}`).join(', ')})`;
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
 * Group commit across agents: every commit queued while a call runs joins the next batch (up to
 * `MAX_BATCH`), and a batch is ONE `commit_batch` call: one round trip, one transaction, one WAL
 * flush. A stale or fenced commit fails alone; a failed call fails its batch with
 * `store_unavailable` (its outcome is then unknown: the caller reloads the agent).
 */
export class CommitBatcher {
  private readonly queue = new GroupQueue<QueuedCommit>((batch) => this.flush(batch), MAX_BATCH);
  private readonly call: string;

  constructor(
    private readonly sql: SqlQuery,
    s: string,
    private readonly failed: (doing: string, err: unknown) => DomainError,
  ) {
    this.call = commitBatchCall(s);
  }

  push(commit: PreparedCommit): Promise<CommitResult> {
    return new Promise((resolve, reject) => this.queue.push({ ...commit, resolve, reject }));
  }

  /** Resolves once every commit queued so far is settled. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async flush(batch: QueuedCommit[]): Promise<void> {
    const args = batchArguments(batch);
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
      const result = outcome(commit, byIdx.get(i + 1));
      if (result instanceof DomainError) commit.reject(result);
      else commit.resolve(result);
    });
  }
}
