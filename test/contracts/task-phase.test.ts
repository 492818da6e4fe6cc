import { describe, expect, it } from 'vitest';
import { TaskStatus } from '../../src/domain/index.js';
import { acceptsTaskUpdate, isTerminalTask, legalTaskTransition, taskPhaseRank } from '../../machines/contracts/index.js';
import { named } from './fixtures.js';

describe('taskPhaseRank and isTerminalTask', () => {
  it.each(named([
    { rule: 'ref§5 phase order: queued is phase 0 (non-terminal)', status: 'queued', rank: 0, terminal: false },
    { rule: 'ref§5 phase order: running is phase 1 (non-terminal)', status: 'running', rank: 1, terminal: false },
    { rule: 'ref§5 phase order: cancelling is phase 2 (non-terminal)', status: 'cancelling', rank: 2, terminal: false },
    { rule: 'seed004 terminal: completed is phase 3', status: 'completed', rank: 3, terminal: true },
    { rule: 'seed004 terminal: failed is phase 3', status: 'failed', rank: 3, terminal: true },
    { rule: 'seed004 terminal: cancelled is phase 3', status: 'cancelled', rank: 3, terminal: true },
    { rule: 'seed004 terminal: interrupted is phase 3', status: 'interrupted', rank: 3, terminal: true },
  ] as const))('%s', (_rule, { status, rank, terminal }) => {
    expect(taskPhaseRank(status)).toBe(rank);
    expect(isTerminalTask(status)).toBe(terminal);
  });
});

describe('acceptsTaskUpdate', () => {
  it.each(named([
    { rule: 'ref§9.2 queued → running is a later phase: accepted', current: 'queued', next: 'running', expected: true },
    { rule: 'ref§9.2 running → cancelling is a later phase: accepted', current: 'running', next: 'cancelling', expected: true },
    { rule: 'ref§9.2 cancelling → cancelled is a later phase: accepted', current: 'cancelling', next: 'cancelled', expected: true },
    { rule: 'ref§9.2 running → completed (terminal) is accepted', current: 'running', next: 'completed', expected: true },
    { rule: 'ref§9.2 queued → failed (terminal) is accepted', current: 'queued', next: 'failed', expected: true },
    { rule: 'ref§5 a skipped phase (queued → cancelling) is still newer: accepted', current: 'queued', next: 'cancelling', expected: true },
    { rule: 'ref§5 an older phase (running → queued) is ignored', current: 'running', next: 'queued', expected: false },
    { rule: 'ref§5 an older phase (cancelling → running) is ignored', current: 'cancelling', next: 'running', expected: false },
    { rule: 'ref§9.2 a terminal record never reopens (completed → running)', current: 'completed', next: 'running', expected: false },
    { rule: 'ref§9.2 a terminal record never reopens (cancelled → queued)', current: 'cancelled', next: 'queued', expected: false },
    { rule: 'ref§5 a different terminal after a terminal is refused (completed → failed)', current: 'completed', next: 'failed', expected: false },
    { rule: 'ref§5 a different terminal after a terminal is refused (interrupted → completed)', current: 'interrupted', next: 'completed', expected: false },
    { rule: 'ref§5 the same status is not an update (running → running)', current: 'running', next: 'running', expected: false },
    { rule: 'ref§5 the same terminal is a duplicate, not an update (completed → completed)', current: 'completed', next: 'completed', expected: false },
  ] as const))('%s', (_rule, { current, next, expected }) => {
    expect(acceptsTaskUpdate(current, next)).toBe(expected);
  });
});

interface Arrow {
  from: TaskStatus;
  to: TaskStatus;
  rule: string;
}

const arrow = (from: TaskStatus, to: TaskStatus, rule: string): Arrow => ({ from, to, rule });

const ARROWS: readonly Arrow[] = [
  arrow('queued', 'running', 'seed004 arrow queued → running (started)'),
  arrow('queued', 'cancelled', 'seed004/ref§9.2 arrow queued → cancelled (stopped before start)'),
  arrow('queued', 'failed', 'seed004/ref§9.2 arrow queued → failed (spawn failure)'),
  arrow('queued', 'interrupted', 'seed004/ref§9.2 arrow queued → interrupted (agent stop or restart before start)'),
  arrow('running', 'completed', 'seed004 arrow running → completed'),
  arrow('running', 'failed', 'seed004 arrow running → failed'),
  arrow('running', 'interrupted', 'seed004 arrow running → interrupted'),
  arrow('running', 'cancelling', 'seed004 arrow running → cancelling (TaskStop with a live handle)'),
  arrow('running', 'cancelled', 'seed004/ref§9.3 arrow running → cancelled (TaskStop "may" skip cancelling)'),
  arrow('cancelling', 'cancelled', 'seed004 arrow cancelling → cancelled'),
  arrow('cancelling', 'interrupted', 'seed004 arrow cancelling → interrupted (agent stop or restart while cancelling)'),
  arrow('cancelling', 'completed', 'seed004/ref§9.2 arrow cancelling → completed (the process exited on its own first)'),
  arrow('cancelling', 'failed', 'seed004/ref§9.2 arrow cancelling → failed (the process exited on its own first)'),
];

const isArrow = (from: TaskStatus, to: TaskStatus): boolean => ARROWS.some((a) => a.from === from && a.to === to);

const NON_ARROWS: readonly Arrow[] = TaskStatus.options.flatMap((from) =>
  TaskStatus.options.filter((to) => !isArrow(from, to)).map((to) => arrow(from, to, `seed004 no arrow ${from} → ${to}`)),
);

describe('legalTaskTransition', () => {
  it.each(named(ARROWS))('%s', (_rule, { from, to }) => {
    expect(legalTaskTransition(from, to)).toBe(true);
  });

  it.each(named(NON_ARROWS))('%s', (_rule, { from, to }) => {
    expect(legalTaskTransition(from, to)).toBe(false);
  });

  it('seed004 no arrow leaves a terminal status', () => {
    const terminal = TaskStatus.options.filter((status) => isTerminalTask(status));
    expect(terminal.flatMap((from) => TaskStatus.options.filter((to) => legalTaskTransition(from, to)))).toEqual([]);
  });

  it('seed004 every legal arrow is also an accepted update', () => {
    for (const { from, to } of ARROWS) expect(acceptsTaskUpdate(from, to)).toBe(true);
  });
});
