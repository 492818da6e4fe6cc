import { describe, expect, it } from 'vitest';
import type { AgentStatus, WakeDisposition } from '../../src/domain/index.js';
import { wakeHintDisposition } from '../../machines/contracts/index.js';
import { named } from './fixtures.js';

interface Row {
  rule: string;
  status: AgentStatus;
  queue_depth: number;
  expected: WakeDisposition;
}

const rows: Row[] = [
  { rule: 'seed003/ref§7.2 stopped, empty queue → ignored', status: 'stopped', queue_depth: 0, expected: 'ignored' },
  { rule: 'seed003/ref§7.2 stopped, queued input → ignored', status: 'stopped', queue_depth: 3, expected: 'ignored' },
  { rule: 'seed003/ref§7.2 awake_running, empty queue → coalesced', status: 'awake_running', queue_depth: 0, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 awake_running, queued input → coalesced', status: 'awake_running', queue_depth: 1, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 awaiting_task, empty queue → coalesced', status: 'awaiting_task', queue_depth: 0, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 awaiting_task, queued input → coalesced', status: 'awaiting_task', queue_depth: 2, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 booting, queued input → coalesced', status: 'booting', queue_depth: 1, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 awake_idle, queued input → coalesced', status: 'awake_idle', queue_depth: 1, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 asleep, queued input → coalesced', status: 'asleep', queue_depth: 5, expected: 'coalesced' },
  { rule: 'seed003/ref§7.2 booting, empty queue → triggered', status: 'booting', queue_depth: 0, expected: 'triggered' },
  { rule: 'seed003/ref§7.2 awake_idle, empty queue → triggered', status: 'awake_idle', queue_depth: 0, expected: 'triggered' },
  { rule: 'seed003/ref§7.2 asleep, empty queue → triggered', status: 'asleep', queue_depth: 0, expected: 'triggered' },
];

describe('wakeHintDisposition', () => {
  it.each(named(rows))('%s', (_rule, { status, queue_depth, expected }) => {
    expect(wakeHintDisposition({ status, queue_depth })).toBe(expected);
  });
});
