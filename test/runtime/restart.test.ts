import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { allEvents, eventsOfType, eventually, openRuntime, tempDataDir, untilAsleep, runtimeSession } from './helpers.js';

describe('restart after a clean shutdown', () => {
  const session = runtimeSession();
  let runtime: Runtime | undefined;

  it('has the same summaries, queues and event logs', async () => {
    runtime = await session.open({ nodeId: 'one' });
    await runtime.createAgent({ agent_id: 'r1', mission: 'remember me' });
    await runtime.createAgent({ agent_id: 'r2' });
    await runtime.prompt('r1', { text: '/exec echo persisted' });
    // Two turns: the prompt, then the task result re-entering.
    await eventually(async () => ((await eventsOfType(runtime as Runtime, 'r1', 'turn_finished')).length >= 2 ? true : undefined));
    await untilAsleep(runtime, 'r1');
    await untilAsleep(runtime, 'r2');
    await runtime.control('r2', { action: 'stop' });
    await runtime.createWorkItem('r2', { objective: 'kept while stopped' });
    await eventually(async () => ((await runtime?.listTasks('r1'))?.length === 0 ? true : undefined));
    const before = {
      s1: await runtime.getSummary('r1'),
      s2: await runtime.getSummary('r2'),
      q1: (await runtime.getState('r1')).queue,
      q2: (await runtime.getState('r2')).queue,
      e1: await allEvents(runtime, 'r1'),
      e2: await allEvents(runtime, 'r2'),
    };
    await runtime.close();
    runtime = await session.open({ nodeId: 'two' });
    const after = {
      s1: await runtime.getSummary('r1'),
      s2: await runtime.getSummary('r2'),
      q1: (await runtime.getState('r1')).queue,
      q2: (await runtime.getState('r2')).queue,
      e1: await allEvents(runtime, 'r1'),
      e2: await allEvents(runtime, 'r2'),
    };
    expect(after.s1).toEqual(before.s1);
    expect(after.s2).toEqual(before.s2);
    expect(after.q1).toEqual(before.q1);
    expect(after.q2).toEqual(before.q2);
    expect(after.e1).toEqual(before.e1);
    expect(after.e2).toEqual(before.e2);
    expect(after.s1.identity.mission).toBe('remember me');
  });
});

describe('taking over a crashed holder', () => {
  it('leaseWaitMs waits out the previous holder’s lease instead of failing', async () => {
    const dir = tempDataDir();
    const { LowdbStore } = await import('../../src/store/index.js');
    // The "crashed" holder: it took the lease and never released it.
    const crashed = new LowdbStore({ dataDir: dir.dir, exclusiveProcessLock: false });
    await crashed.open();
    await crashed.acquireLease('crashed-node', 600, new Date());
    await expect(openRuntime(dir.dir, { nodeId: 'impatient', store: new LowdbStore({ dataDir: dir.dir, exclusiveProcessLock: false }) })).rejects.toMatchObject({ code: 'lease_lost' });
    const patient = await openRuntime(dir.dir, { nodeId: 'patient', leaseWaitMs: 5_000, store: new LowdbStore({ dataDir: dir.dir, exclusiveProcessLock: false }) });
    try {
      expect((await patient.readiness()).lease.holder).toBe('patient');
    } finally {
      await patient.close();
      await crashed.close();
      dir.cleanup();
    }
  });
});
