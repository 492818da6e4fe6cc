import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventsOfType, eventually, untilAsleep, runtimeSession } from './helpers.js';

describe('durable timers', () => {
  const session = runtimeSession();
  let runtime: Runtime | undefined;

  it('a 300 ms timer fires exactly once and reaches the agent as a timer_fire continuation', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'timed' });
    await untilAsleep(runtime, 'timed');
    const timer = await runtime.createTimer('timed', { duration_ms: 300, summary: 'check the build' });
    expect(timer.status).toBe('active');
    const fired = await eventually(async () => {
      const t = await runtime?.getTimer('timed', timer.id);
      return t?.status === 'completed' ? t : undefined;
    });
    expect(fired.fire_count).toBe(1);
    const resolution = await eventually(async () =>
      (await eventsOfType(runtime as Runtime, 'timed', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'timer_fire'),
    );
    expect(resolution.payload['model_reentry']).toBe(true);
    // Wait well past another period: nothing fires twice.
    await new Promise((r) => setTimeout(r, 600));
    expect((await eventsOfType(runtime, 'timed', 'timer_fired')).length).toBe(1);
  });

  it('a timer due while the runtime is down fires once after restart', async () => {
    runtime = await session.open({ nodeId: 'first' });
    await runtime.createAgent({ agent_id: 'later' });
    await untilAsleep(runtime, 'later');
    const timer = await runtime.createTimer('later', { duration_ms: 400 });
    await runtime.close();
    runtime = undefined;
    await new Promise((r) => setTimeout(r, 700));
    runtime = await session.open({ nodeId: 'second' });
    const fired = await eventually(async () => {
      const t = await runtime?.getTimer('later', timer.id);
      return t?.status === 'completed' ? t : undefined;
    });
    expect(fired.fire_count).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect((await eventsOfType(runtime, 'later', 'timer_fired')).length).toBe(1);
  });

  it('interval timers fire once per due time until cancelled; cancel is idempotent; a completed timer refuses cancel', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'ticker' });
    const interval = await runtime.createTimer('ticker', { duration_ms: 100, interval_ms: 100 });
    await eventually(async () => ((await runtime?.getTimer('ticker', interval.id))?.fire_count ?? 0) >= 3 || undefined);
    const cancelled = await runtime.cancelTimer('ticker', interval.id);
    expect(cancelled.status).toBe('cancelled');
    const count = cancelled.fire_count;
    await new Promise((r) => setTimeout(r, 300));
    expect((await runtime.getTimer('ticker', interval.id)).fire_count).toBe(count);
    expect((await runtime.cancelTimer('ticker', interval.id)).status).toBe('cancelled');
    const once = await runtime.createTimer('ticker', { duration_ms: 0 });
    await eventually(async () => (await runtime?.getTimer('ticker', once.id))?.status === 'completed' || undefined);
    await expect(runtime.cancelTimer('ticker', once.id)).rejects.toMatchObject({ code: 'timer_completed' });
    await expect(runtime.cancelTimer('ticker', 'tmr_missing')).rejects.toMatchObject({ code: 'timer_not_found' });
  });
});
