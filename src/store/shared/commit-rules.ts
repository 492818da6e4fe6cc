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
