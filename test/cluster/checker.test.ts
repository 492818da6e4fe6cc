import { describe, expect, it } from 'vitest';
import { checkCluster, type ClusterFacts, type EventRow, type ViolationRule } from './checker.js';

/**
 * One agent's clean history across a takeover: created and prompted by node A under agent token 1,
 * a timer fired and a command started, then node B granted token 2 at version 3 and writing on.
 */
function cleanFacts(): ClusterFacts {
  const e = (event_seq: number, version: number, fencing_token: number, type: string, payload: Record<string, unknown> = {}): EventRow => ({
    agent_id: 'a1',
    event_seq,
    version,
    fence: 'a',
    fencing_token,
    type,
    payload,
  });
  return {
    agents: [{ agent_id: 'a1', version: 5, last_event_seq: 7 }],
    events: [
      e(1, 1, 1, 'agent_created'),
      e(2, 2, 1, 'message_queued', { message_id: 'm1' }),
      e(3, 2, 1, 'timer_fired', { timer_id: 't1', due_at: '2026-12-02T10:00:00.000Z' }),
      e(4, 3, 1, 'task_status_changed', { task_id: 'k1', status: 'running', pid: 41 }),
      e(5, 4, 2, 'task_status_changed', { task_id: 'k1', status: 'interrupted' }),
      e(6, 4, 2, 'timer_fired', { timer_id: 't1', due_at: '2026-12-02T10:05:00.000Z' }),
      e(7, 5, 2, 'message_queued', { message_id: 'm2' }),
    ],
    grants: [
      { agent_id: 'a1', fencing_token: 1, at_version: 0 },
      { agent_id: 'a1', fencing_token: 2, at_version: 3 },
    ],
    acknowledged: [
      { agent_id: 'a1', kind: 'agent' },
      { agent_id: 'a1', kind: 'message', message_id: 'm1' },
      { agent_id: 'a1', kind: 'message', message_id: 'm2' },
    ],
  };
}

const rules = (facts: ClusterFacts): ViolationRule[] => [...new Set(checkCluster(facts).map((v) => v.rule))];

function edited(edit: (facts: ClusterFacts) => void): ClusterFacts {
  const facts = cleanFacts();
  edit(facts);
  return facts;
}

const event = (facts: ClusterFacts, seq: number): EventRow => facts.events.find((e) => e.event_seq === seq) as EventRow;

describe('cluster checker', () => {
  it('finds nothing in a clean history with a takeover', () => {
    expect(checkCluster(cleanFacts())).toEqual([]);
  });

  const violations: Array<[string, ViolationRule, (facts: ClusterFacts) => void]> = [
    ['an acknowledged message that is not in the log', 'acknowledged_missing', (f) => f.acknowledged.push({ agent_id: 'a1', kind: 'message', message_id: 'm3' })],
    ['an acknowledged agent that was never created', 'acknowledged_missing', (f) => f.acknowledged.push({ agent_id: 'a2', kind: 'agent' })],
    ['a gap in event_seq', 'chain_broken', (f) => (f.events = f.events.filter((e) => e.event_seq !== 4))],
    ['fewer events than last_event_seq says', 'chain_broken', (f) => f.events.pop()],
    ['a version going back', 'chain_broken', (f) => (event(f, 6).version = 3)],
    ['an event above the row version', 'chain_broken', (f) => (event(f, 7).version = 6)],
    ['events without an agents row', 'chain_broken', (f) => (f.agents = [])],
    ['a token going back within one fence', 'token_decreased', (f) => (event(f, 7).fencing_token = 1)],
    ['a write under token 1 after token 2 was granted at version 3', 'write_after_larger_grant', (f) => (f.grants[1] = { agent_id: 'a1', fencing_token: 2, at_version: 2 })],
    ['a write under a token no grant gave', 'token_never_granted', (f) => (f.grants = f.grants.slice(0, 1))],
    ['a timer fired twice for one due time', 'timer_fired_twice', (f) => (event(f, 6).payload['due_at'] = '2026-12-02T10:00:00.000Z')],
    ['a command started twice', 'command_started_twice', (f) => (event(f, 5).payload = { task_id: 'k1', status: 'running', pid: 42 })],
  ];

  it.each(violations)('catches %s (%s)', (_name, rule, edit) => {
    expect(rules(edited(edit))).toContain(rule);
  });

  it('names the agent and the events of a violation', () => {
    const [violation] = checkCluster(edited((f) => (event(f, 5).payload = { task_id: 'k1', status: 'running', pid: 42 })));
    expect(violation).toEqual({ rule: 'command_started_twice', agent_id: 'a1', detail: 'command task k1 started 2 times (events 4, 5)' });
  });

  it('compares tokens only within one fence: a switch from the store lease to agent leases is no decrease', () => {
    const facts = edited((f) => {
      for (const e of f.events.slice(0, 3)) Object.assign(e, { fence: 's', fencing_token: 9 });
    });
    expect(checkCluster(facts)).toEqual([]);
  });
});
