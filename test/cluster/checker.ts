import { z } from 'zod';

/**
 * The cluster checker (issue 19, acceptance #1): given what the database holds after a run (read
 * by `read-facts.ts`) and what the clients were told was accepted, lists every violation of
 * - every acknowledged operation present (its `message_queued`, or its agent's `agent_created`);
 * - each agent's commits one chain: event_seq dense from 1 to the row's `last_event_seq`, versions
 *   non-decreasing along it and never above the row's, fencing tokens non-decreasing per fence;
 * - no write under a token after a larger one was granted (a grant at version v fences every
 *   commit above v), and no write under an agent-lease token that was never granted;
 * - every timer fired once per due time;
 * - no command started twice.
 * Pure: no I/O, so `checker.test.ts` feeds it hand-made violating data.
 */

export const AgentRow = z.object({ agent_id: z.string(), version: z.number().int(), last_event_seq: z.number().int() });
export type AgentRow = z.infer<typeof AgentRow>;

export const EventRow = z.object({
  agent_id: z.string(),
  event_seq: z.number().int(),
  version: z.number().int(),
  /** 's': fenced by the store lease; 'a': by the agent's lease. */
  fence: z.enum(['s', 'a']),
  fencing_token: z.number().int(),
  type: z.string(),
  payload: z.record(z.string(), z.unknown()),
});
export type EventRow = z.infer<typeof EventRow>;

/** One agent-lease grant (`lease_grants`): the token, and the agent's version when it was granted. */
export const GrantRow = z.object({ agent_id: z.string(), fencing_token: z.number().int(), at_version: z.number().int() });
export type GrantRow = z.infer<typeof GrantRow>;

/** What a client was answered 2xx for: a created agent, or a queued message (its id). */
export const Acknowledged = z.discriminatedUnion('kind', [
  z.object({ agent_id: z.string(), kind: z.literal('agent') }),
  z.object({ agent_id: z.string(), kind: z.literal('message'), message_id: z.string() }),
]);
export type Acknowledged = z.infer<typeof Acknowledged>;

export const ClusterFacts = z.object({ agents: z.array(AgentRow), events: z.array(EventRow), grants: z.array(GrantRow), acknowledged: z.array(Acknowledged) });
export type ClusterFacts = z.infer<typeof ClusterFacts>;

export const ViolationRule = z.enum([
  'acknowledged_missing',
  'chain_broken',
  'token_decreased',
  'write_after_larger_grant',
  'token_never_granted',
  'timer_fired_twice',
  'command_started_twice',
]);
export type ViolationRule = z.infer<typeof ViolationRule>;

export const Violation = z.object({ rule: ViolationRule, agent_id: z.string(), detail: z.string() });
export type Violation = z.infer<typeof Violation>;

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [row]);
    else group.push(row);
  }
  return groups;
}

function checkAcknowledged(facts: ClusterFacts, byAgent: Map<string, EventRow[]>): Violation[] {
  const out: Violation[] = [];
  for (const ack of facts.acknowledged) {
    const events = byAgent.get(ack.agent_id) ?? [];
    const present =
      ack.kind === 'agent'
        ? events.some((e) => e.type === 'agent_created')
        : events.some((e) => e.type === 'message_queued' && e.payload['message_id'] === ack.message_id);
    if (!present) {
      out.push({ rule: 'acknowledged_missing', agent_id: ack.agent_id, detail: ack.kind === 'agent' ? 'acknowledged agent has no agent_created' : `acknowledged message ${ack.message_id} has no message_queued` });
    }
  }
  return out;
}

function checkChain(agent_id: string, row: AgentRow | undefined, events: EventRow[]): Violation[] {
  const out: Violation[] = [];
  const broken = (detail: string): void => void out.push({ rule: 'chain_broken', agent_id, detail });
  if (row === undefined) {
    broken(`${events.length} events but no agents row`);
    return out;
  }
  if (events.length !== row.last_event_seq) broken(`${events.length} events, last_event_seq ${row.last_event_seq}`);
  const lastToken = new Map<string, number>();
  events.forEach((event, i) => {
    if (event.event_seq !== i + 1) broken(`event_seq ${event.event_seq} at position ${i + 1}`);
    const previous = events[i - 1];
    if (previous !== undefined && event.version < previous.version) broken(`event ${event.event_seq} at version ${event.version} after version ${previous.version}`);
    if (event.version > row.version) broken(`event ${event.event_seq} at version ${event.version}, above the row's ${row.version}`);
    const before = lastToken.get(event.fence);
    if (before !== undefined && event.fencing_token < before) {
      out.push({ rule: 'token_decreased', agent_id, detail: `event ${event.event_seq} under ${event.fence} token ${event.fencing_token} after token ${before}` });
    }
    lastToken.set(event.fence, Math.max(before ?? event.fencing_token, event.fencing_token));
  });
  return out;
}

function checkGrants(agent_id: string, events: EventRow[], grants: GrantRow[]): Violation[] {
  const out: Violation[] = [];
  const granted = new Set(grants.map((g) => g.fencing_token));
  const reported = new Set<number>();
  for (const event of events) {
    if (event.fence !== 'a') continue;
    if (!granted.has(event.fencing_token) && !reported.has(event.fencing_token)) {
      reported.add(event.fencing_token);
      out.push({ rule: 'token_never_granted', agent_id, detail: `event ${event.event_seq} under agent token ${event.fencing_token}, which no grant gave` });
    }
    const fencedBy = grants.find((g) => g.fencing_token > event.fencing_token && g.at_version < event.version);
    if (fencedBy !== undefined) {
      out.push({
        rule: 'write_after_larger_grant',
        agent_id,
        detail: `event ${event.event_seq} (version ${event.version}) under token ${event.fencing_token}, after token ${fencedBy.fencing_token} was granted at version ${fencedBy.at_version}`,
      });
    }
  }
  return out;
}

/** Events of one type, grouped by the key, whose group has more than one member. */
function repeated(events: EventRow[], matches: (e: EventRow) => boolean, key: (e: EventRow) => string): Array<[string, EventRow[]]> {
  return [...groupBy(events.filter(matches), key)].filter(([, group]) => group.length > 1);
}

function checkOnce(agent_id: string, events: EventRow[]): Violation[] {
  const timers = repeated(
    events,
    (e) => e.type === 'timer_fired',
    (e) => `${String(e.payload['timer_id'])} at ${String(e.payload['due_at'])}`,
  ).map(([key, group]): Violation => ({ rule: 'timer_fired_twice', agent_id, detail: `timer ${key} fired ${group.length} times (events ${group.map((e) => e.event_seq).join(', ')})` }));
  const commands = repeated(
    events,
    (e) => e.type === 'task_status_changed' && e.payload['status'] === 'running' && typeof e.payload['pid'] === 'number',
    (e) => String(e.payload['task_id']),
  ).map(([task, group]): Violation => ({ rule: 'command_started_twice', agent_id, detail: `command task ${task} started ${group.length} times (events ${group.map((e) => e.event_seq).join(', ')})` }));
  return [...timers, ...commands];
}

export function checkCluster(facts: ClusterFacts): Violation[] {
  const byAgent = groupBy(
    [...facts.events].sort((a, b) => a.event_seq - b.event_seq),
    (e) => e.agent_id,
  );
  const grantsByAgent = groupBy(facts.grants, (g) => g.agent_id);
  const rows = new Map(facts.agents.map((a) => [a.agent_id, a]));
  const violations = checkAcknowledged(facts, byAgent);
  for (const agent_id of new Set([...rows.keys(), ...byAgent.keys()])) {
    const events = byAgent.get(agent_id) ?? [];
    violations.push(...checkChain(agent_id, rows.get(agent_id), events), ...checkGrants(agent_id, events, grantsByAgent.get(agent_id) ?? []), ...checkOnce(agent_id, events));
  }
  return violations;
}
