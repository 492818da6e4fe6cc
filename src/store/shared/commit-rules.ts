import { AgentId, DomainError } from '../../domain/index.js';

/** Agent ids become directory names in file stores, so every store refuses what the schema refuses. */
export function assertAgentId(agent_id: string): void {
  if (!AgentId.safeParse(agent_id).success) {
    throw new DomainError('invalid_request', `invalid agent id ${JSON.stringify(agent_id)}`);
  }
}

/** Compare-and-set on the agent's version; `current` is `null` when the agent does not exist. */
export function assertExpectedVersion(agent_id: string, current: number | null, expected: number | null): void {
  if (expected === current) return;
  const message =
    expected === null
      ? `agent ${agent_id} already exists (version ${current})`
      : current === null
        ? `agent ${agent_id} does not exist (expected version ${expected})`
        : `agent ${agent_id} is at version ${current}, not ${expected}`;
  throw new DomainError('version_conflict', message, { current_version: current });
}

/** Stable across stores and restarts: the id of an event is its position in its agent's log. */
export function eventId(agent_id: string, event_seq: number): string {
  return `${agent_id}:${event_seq}`;
}

/** The one fence a commit carries: the store-wide lease's token or the agent lease's. */
export interface CommitFence {
  kind: 'store' | 'agent';
  token: number;
}

/** Reads a commit's fence; `invalid_request` unless it carries exactly one whole-number token. */
export function commitFence(commit: { fencing_token?: number | undefined; agent_fencing_token?: number | undefined }): CommitFence {
  const store = commit.fencing_token;
  const agent = commit.agent_fencing_token;
  if ((store === undefined) === (agent === undefined)) {
    throw new DomainError('invalid_request', 'a commit carries exactly one of fencing_token and agent_fencing_token');
  }
  const fence: CommitFence = store === undefined ? { kind: 'agent', token: agent as number } : { kind: 'store', token: store };
  if (!Number.isSafeInteger(fence.token)) throw new DomainError('invalid_request', `fencing token ${fence.token} is not a whole number`);
  return fence;
}
