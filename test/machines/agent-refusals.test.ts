import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { AgentEvent } from '../../machines/agent.machine.js';
import type { SchedulerFacts } from '../../src/domain/index.js';
import { SAMPLES, SAMPLE_NAMES, legalTarget } from './agent-transitions.js';
import type { SampleName } from './agent-transitions.js';
import { AGENT_STATES, NOTHING, QUEUED, RUN_ID, agentIn, facts, statePath, taskFact } from './fixtures.js';
import type { AgentStateName } from './fixtures.js';

/** Events some state handles without moving: they are accepted, not refused, so `can` reports them. */
function handledInPlace(state: AgentStateName, sample: SampleName): boolean {
  return sample === 'task.finished' || (sample === 'TASK.SPAWN' && state.startsWith('active.'));
}

// XState warns when an event reaches an actor that already finished (terminated); keep it for assertions.
let warn: MockInstance<typeof console.warn>;
beforeEach(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  warn.mockRestore();
});

const REFUSED = AGENT_STATES.flatMap((state) =>
  SAMPLE_NAMES.filter((sample) => legalTarget(state, sample) === undefined).map((sample) => ({ state, sample })),
);

describe('agent machine: every event not in the legal table is refused', () => {
  it.each(REFUSED)('$state refuses [$sample]', ({ state, sample }) => {
    const { actor, effects } = agentIn(state);
    const before = actor.getSnapshot();
    const requested = effects.length;
    const event = SAMPLES[sample];
    if (!handledInPlace(state, sample)) expect(before.can(event)).toBe(false);
    actor.send(event);
    const after = actor.getSnapshot();
    expect(statePath(after.value)).toBe(state);
    expect(after.context).toEqual(before.context);
    expect(effects).toHaveLength(requested);
  });
});

describe('agent machine: named refusals', () => {
  it.each(SAMPLE_NAMES)('nothing leaves terminated: [%s]', (sample) => {
    const { actor } = agentIn('terminated');
    actor.send(SAMPLES[sample]);
    expect(actor.getSnapshot().value).toBe('terminated');
    expect(actor.getSnapshot().status).toBe('done');
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('has already reached its final state'));
  });

  it('terminated is final and has no transitions of its own', () => {
    const { actor } = agentIn('terminated');
    const snapshot = actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    for (const sample of SAMPLE_NAMES) {
      if (sample !== 'task.finished') expect(snapshot.can(SAMPLES[sample]), sample).toBe(false);
    }
  });

  it.each(['TURN.START queued input', 'TURN.START empty queue'] as const)('a stopped agent refuses [%s]', (sample) => {
    const { actor } = agentIn('stopped');
    expect(actor.getSnapshot().can(SAMPLES[sample])).toBe(false);
    actor.send(SAMPLES[sample]);
    expect(actor.getSnapshot().value).toBe('stopped');
    expect(actor.getSnapshot().context.runId).toBeNull();
  });

  it('no single event takes a stopped agent into awakeRunning', () => {
    for (const sample of SAMPLE_NAMES) {
      const { actor } = agentIn('stopped');
      actor.send(SAMPLES[sample]);
      expect(statePath(actor.getSnapshot().value), sample).not.toBe('active.awakeRunning');
    }
  });

  it.each(['active.awakeIdle', 'active.awaitingTask'] as const)('%s refuses TURN.START without queued input', (state) => {
    const { actor } = agentIn(state);
    actor.send(SAMPLES['TURN.START empty queue']);
    expect(statePath(actor.getSnapshot().value)).toBe(state);
    expect(actor.getSnapshot().context.runId).toBeNull();
  });

  it('an interrupted entry awaiting replay counts as queued input for TURN.START', () => {
    const { actor } = agentIn('active.awakeIdle');
    actor.send({ type: 'TURN.START', runId: 'run-9', facts: facts({ queue: { queued: 0, interrupted: 1 } }) });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeRunning' });
    expect(actor.getSnapshot().context.runId).toBe('run-9');
  });

  const busy: { why: string; facts: SchedulerFacts }[] = [
    { why: 'queued input', facts: QUEUED },
    { why: 'an interrupted entry awaiting replay', facts: facts({ queue: { queued: 0, interrupted: 1 } }) },
    {
      why: 'runnable work',
      facts: facts({
        work_items: [
          {
            id: 'w1',
            state: 'open',
            plan_status: 'ready',
            blocked_by: null,
            revision: 1,
            created_at: '2026-01-01T00:00:00.000Z',
            updated_at: '2026-01-01T00:00:00.000Z',
          },
        ],
      }),
    },
    { why: 'an active task', facts: facts({ tasks: [taskFact('t1', 'running')] }) },
    { why: 'a queued task', facts: facts({ tasks: [taskFact('t1', 'queued')] }) },
    { why: 'a cancelling task', facts: facts({ tasks: [taskFact('t1', 'cancelling')] }) },
    { why: 'a pending wake hint', facts: facts({ pending_wake_hint: true }) },
    { why: 'a turn in progress', facts: facts({ current_run_id: 'run-x' }) },
    { why: 'a stopped status', facts: facts({ status: 'stopped' }) },
  ];

  it.each(busy)('IDLE with $why does not sleep', ({ facts: busyFacts }) => {
    const { actor, effects } = agentIn('active.awakeIdle');
    actor.send({ type: 'IDLE', facts: busyFacts });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
    expect(effects.map((effect) => effect.effect)).not.toContain('sleep');
  });

  it('IDLE with only finished tasks, waits and timers sleeps (sleep keeps the wake conditions)', () => {
    const { actor } = agentIn('active.awakeIdle');
    const resting = facts({
      tasks: [taskFact('t1', 'completed'), taskFact('t2', 'failed')],
      waits: [{ id: 'w', kind: 'external', status: 'active', work_item_id: null, subject_ref: null }],
      active_timers: 2,
    });
    actor.send({ type: 'IDLE', facts: resting });
    expect(actor.getSnapshot().value).toBe('sleeping');
  });

  it('a stale TURN.FINISHED (another run id) is ignored', () => {
    const { actor } = agentIn('active.awakeRunning');
    const event: AgentEvent = { type: 'TURN.FINISHED', runId: 'run-other', facts: NOTHING };
    expect(actor.getSnapshot().can(event)).toBe(false);
    actor.send(event);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeRunning' });
    expect(actor.getSnapshot().context.runId).toBe(RUN_ID);
  });

  it('a stale TURN.FINISHED with active tasks does not move to awaitingTask either', () => {
    const { actor } = agentIn('active.awakeRunning');
    actor.send({ type: 'TURN.FINISHED', runId: 'run-other', facts: facts({ tasks: [taskFact('t1', 'running')] }) });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeRunning' });
  });

  it.each(['TASK.SETTLED', 'IDLE'] as const)('%s with a task still active keeps the agent awaitingTask', (type) => {
    const { actor } = agentIn('active.awaitingTask');
    actor.send({ type, facts: facts({ tasks: [taskFact('t1', 'completed'), taskFact('t2', 'running')] }) });
    expect(actor.getSnapshot().value).toEqual({ active: 'awaitingTask' });
  });

  it('RECOVER.DONE needs a snapshot id: an empty one leaves the agent recovering', () => {
    const { actor } = agentIn('recovering');
    expect(actor.getSnapshot().can(SAMPLES['RECOVER.DONE without snapshot'])).toBe(false);
    actor.send(SAMPLES['RECOVER.DONE without snapshot']);
    expect(actor.getSnapshot().value).toBe('recovering');
    actor.send(SAMPLES['RECOVER.DONE with snapshot']);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
  });

  it('a one-character snapshot id is enough', () => {
    const { actor } = agentIn('recovering');
    actor.send({ type: 'RECOVER.DONE', snapshotId: 's' });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
  });

  it('WAKE.REFUSED returns to sleeping with the refusal recorded, never Active', () => {
    const { actor, effects } = agentIn('waking');
    actor.send(SAMPLES['WAKE.REFUSED']);
    expect(actor.getSnapshot().value).toBe('sleeping');
    expect(actor.getSnapshot().context.refusal).toEqual({ reason: 'schema_version 3 unsupported', hint: 'migrate to 4' });
    expect(effects.at(-1)?.effect).toBe('sleep');
  });
});
