import { describe, expect, it } from 'vitest';
import { LEGAL, SAMPLES } from './agent-transitions.js';
import { AGENT_ID, RUN_ID, agentIn, startAgent, statePath } from './fixtures.js';

describe('agent machine: legal transitions (seed 002 phases)', () => {
  it.each(LEGAL)('$from --[$sample]--> $to', ({ from, sample, to }) => {
    const { actor } = agentIn(from);
    const event = SAMPLES[sample];
    // A transition that stays put and does nothing (a stale finish) is not reported by `can`.
    if (to !== from) expect(actor.getSnapshot().can(event)).toBe(true);
    actor.send(event);
    expect(statePath(actor.getSnapshot().value)).toBe(to);
    expect(actor.getSnapshot().status).toBe(to === 'terminated' ? 'done' : 'active');
  });
});

describe('agent machine: context along the lifecycle', () => {
  it('starts Created with no run, no failure, the Booting label in reserve, epoch 0 and not stopped asleep', () => {
    const { actor } = startAgent();
    const snapshot = actor.getSnapshot();
    expect(snapshot.value).toBe('created');
    expect(snapshot.context).toEqual({
      agentId: AGENT_ID,
      runId: null,
      epoch: 0,
      statusBeforeRecovery: 'booting',
      failure: null,
      refusal: null,
      stoppedAsleep: false,
    });
  });

  it('spawns its continuation actor at start, bound to the same agent', () => {
    const { actor } = startAgent([], 'agent-x');
    const continuation = actor.getSnapshot().children['continuation'];
    expect(continuation).toBeDefined();
    expect(continuation?.getSnapshot().context).toMatchObject({ agentId: 'agent-x', wait: null, hint: null });
  });

  it.each(['active.awakeIdle', 'active.awaitingTask'] as const)('TURN.START in %s records the run id', (from) => {
    const { actor } = agentIn(from);
    actor.send(SAMPLES['TURN.START queued input']);
    expect(actor.getSnapshot().context.runId).toBe('run-2');
  });

  it.each([
    'TURN.FINISHED own run, nothing left',
    'TURN.FINISHED own run, active task',
    'TURN.ABORT',
    'STOP',
    'TERMINATE',
    'RECOVER',
  ] as const)('%s clears the current run', (sample) => {
    const { actor } = agentIn('active.awakeRunning');
    expect(actor.getSnapshot().context.runId).toBe(RUN_ID);
    actor.send(SAMPLES[sample]);
    expect(actor.getSnapshot().context.runId).toBeNull();
  });

  it('a stale TURN.FINISHED keeps the current run; the own run then finishes it', () => {
    const { actor } = agentIn('active.awakeRunning');
    actor.send(SAMPLES['TURN.FINISHED stale run']);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeRunning' });
    expect(actor.getSnapshot().context.runId).toBe(RUN_ID);
    actor.send(SAMPLES['TURN.FINISHED own run, nothing left']);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
  });

  it.each([
    { from: 'initializing', sample: 'INITIALIZE.FAILED recoverable', failure: { phase: 'initializing', reason: 'store unreachable' } },
    { from: 'initializing', sample: 'INITIALIZE.FAILED unrecoverable', failure: { phase: 'initializing', reason: 'bad config' } },
    { from: 'sleeping', sample: 'SLEEP.FAILED', failure: { phase: 'sleeping', reason: 'persist failed' } },
    { from: 'waking', sample: 'WAKE.FAILED', failure: { phase: 'waking', reason: 'checksum mismatch' } },
    { from: 'evolving', sample: 'EVOLVE.FAILED', failure: { phase: 'evolving', reason: 'regression' } },
    // The runtime names the termination step that failed (seed 002 scenario 5: diagnosable, not a success mark).
    { from: 'terminating', sample: 'TERMINATE.FAILED', failure: { phase: 'revoke_lease', reason: 'timeout' } },
    { from: 'recovering', sample: 'RECOVER.FAILED', failure: { phase: 'recovering', reason: 'no verified point' } },
  ] as const)('$sample in $from records the failure', ({ from, sample, failure }) => {
    const { actor } = agentIn(from);
    actor.send(SAMPLES[sample]);
    expect(actor.getSnapshot().context.failure).toEqual(failure);
  });

  it('an unrecoverable init failure keeps the agent Created with the reason, and a retry clears it', () => {
    const { actor } = agentIn('initializing');
    actor.send(SAMPLES['INITIALIZE.FAILED unrecoverable']);
    expect(actor.getSnapshot().value).toBe('created');
    expect(actor.getSnapshot().context.failure?.reason).toBe('bad config');
    actor.send({ type: 'INITIALIZE' });
    actor.send({ type: 'INITIALIZE.DONE' });
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
    expect(actor.getSnapshot().context.failure).toBeNull();
  });

  it('a failed recovery stays Recovering; a verified recovery point then clears the failure', () => {
    const { actor } = agentIn('waking');
    actor.send(SAMPLES['WAKE.FAILED']);
    actor.send(SAMPLES['RECOVER.FAILED']);
    expect(actor.getSnapshot().value).toBe('recovering');
    actor.send(SAMPLES['RECOVER.DONE with snapshot']);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
    expect(actor.getSnapshot().context.failure).toBeNull();
  });

  it('WAKE.REFUSED returns to Sleeping with the refusal recorded; a later wake clears it', () => {
    const { actor } = agentIn('waking');
    actor.send(SAMPLES['WAKE.REFUSED']);
    expect(actor.getSnapshot().value).toBe('sleeping');
    expect(actor.getSnapshot().context.refusal).toEqual({ reason: 'schema_version 3 unsupported', hint: 'migrate to 4' });
    expect(actor.getSnapshot().context.failure).toBeNull();
    actor.send(SAMPLES.WAKE);
    expect(actor.getSnapshot().context.refusal).not.toBeNull();
    actor.send(SAMPLES['WAKE.DONE']);
    expect(actor.getSnapshot().context.refusal).toBeNull();
  });

  it('a verified recovery clears a recorded refusal too', () => {
    const { actor } = agentIn('waking');
    actor.send(SAMPLES['WAKE.REFUSED']);
    actor.send(SAMPLES.RECOVER);
    actor.send(SAMPLES['RECOVER.DONE with snapshot']);
    expect(actor.getSnapshot().context.refusal).toBeNull();
  });

  it('Start hands a stopped agent back to the scheduler without starting a turn', () => {
    const { actor } = agentIn('stopped');
    actor.send(SAMPLES.START);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeIdle' });
    expect(actor.getSnapshot().context.runId).toBeNull();
  });

  it('Stop keeps the agent alive and restartable (no Pause/Resume, no terminal stop)', () => {
    const { actor } = agentIn('active.awakeRunning');
    actor.send(SAMPLES.STOP);
    expect(actor.getSnapshot().status).toBe('active');
    actor.send(SAMPLES.START);
    actor.send(SAMPLES['TURN.START queued input']);
    expect(actor.getSnapshot().value).toEqual({ active: 'awakeRunning' });
  });

  it('walks a long life: init, turn, task wait, sleep, wake, evolve, stop, terminate', () => {
    const { actor } = startAgent();
    const visited: string[] = [];
    const step = (sample: keyof typeof SAMPLES) => {
      actor.send(SAMPLES[sample]);
      visited.push(statePath(actor.getSnapshot().value));
    };
    step('INITIALIZE');
    step('INITIALIZE.DONE');
    step('TURN.START queued input');
    actor.send({ type: 'TURN.FINISHED', runId: 'run-2', facts: SAMPLES['TASK.SETTLED active task'].facts });
    visited.push(statePath(actor.getSnapshot().value));
    step('TASK.SETTLED no active task');
    step('IDLE nothing pending');
    step('WAKE');
    step('WAKE.DONE');
    step('EVOLVE');
    step('EVOLVE.DONE accepted');
    step('STOP');
    step('TERMINATE');
    step('TERMINATE.DONE');
    expect(visited).toEqual([
      'initializing',
      'active.awakeIdle',
      'active.awakeRunning',
      'active.awaitingTask',
      'active.awakeIdle',
      'sleeping',
      'waking',
      'active.awakeIdle',
      'evolving',
      'active.awakeIdle',
      'stopped',
      'terminating',
      'terminated',
    ]);
    expect(actor.getSnapshot().status).toBe('done');
  });
});
