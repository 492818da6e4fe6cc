import { describe, expect, it } from 'vitest';
import { agentOfRunId, runIdFor } from '../../src/domain/index.js';

describe('run ids name their agent', () => {
  it.each([
    ['a plain agent id', 'support', 'run_0123456789abcdef0123', 'support'],
    ['an agent id with dots (the first dot splits)', 'team.bot.v2', 'run_0123456789abcdef0123', 'team.bot.v2'],
    ['an agent id with dashes and underscores', 'a-b_c', 'run_ffffffffffffffffffff', 'a-b_c'],
  ])('%s', (_, agentId, random, expected) => {
    const runId = runIdFor(random, agentId);
    expect(runId.startsWith(random)).toBe(true);
    expect(agentOfRunId(runId)).toBe(expected);
  });

  it.each([
    ['an id of an earlier version (no agent part)', 'run_0123456789abcdef0123'],
    ['an empty agent part', 'run_0123456789abcdef0123.'],
    ['an agent part no agent id may be', 'run_0123456789abcdef0123./etc/passwd'],
    ['an agent part over 128 characters', `run_x.${'a'.repeat(129)}`],
  ])('names none for %s', (_, runId) => {
    expect(agentOfRunId(runId)).toBeUndefined();
  });
});
