import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/domain/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { LowdbStore, type StoredAgent } from '../../src/store/index.js';
import { allEvents, eventsOfType, eventually, processedMessageIds, runtimeSession, untilAsleep } from './helpers.js';

/** The real lowdb store, recording which agent documents the runtime reads. */
class RecordingStore extends LowdbStore {
  readonly loads: string[] = [];

  override loadAgent(agentId: string): Promise<StoredAgent | null> {
    this.loads.push(agentId);
    return super.loadAgent(agentId);
  }
}

const text = (value: string) => ({ content_type: 'text/plain', body: Buffer.from(value) });

/** Creates the agents and waits until each has gone to sleep on its own. */
async function createAsleep(runtime: Runtime, ...agentIds: string[]): Promise<void> {
  for (const agentId of agentIds) await runtime.createAgent({ agent_id: agentId });
  for (const agentId of agentIds) await untilAsleep(runtime, agentId);
}

/** The event types one prompt cycle of a sleeping agent appends, from its first event on. */
async function promptCycle(runtime: Runtime, agentId: string, prompt: string): Promise<string[]> {
  const from = (await allEvents(runtime, agentId)).length;
  const turns = (await eventsOfType(runtime, agentId, 'turn_finished')).length;
  await runtime.prompt(agentId, { text: prompt });
  await eventually(async () => (await eventsOfType(runtime, agentId, 'turn_finished')).length > turns || undefined);
  await untilAsleep(runtime, agentId);
  return (await allEvents(runtime, agentId)).slice(from).map((e) => e.type);
}

/**
 * Leaves the agent's doc.json as a runtime before roster entries would have written it, in a data
 * directory from before the store kept a roster index (so the store rebuilds it from the docs).
 */
function dropRosterEntry(dataDir: string, agentId: string): void {
  rmSync(join(dataDir, 'roster.tsv'));
  const path = join(dataDir, 'agents', agentId, 'doc.json');
  const { roster: _roster, ...record } = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  writeFileSync(path, JSON.stringify(record));
}

describe('lazy boot from the roster', () => {
  const session = runtimeSession();

  async function reopen(nodeId: string): Promise<{ runtime: Runtime; store: RecordingStore }> {
    const store = new RecordingStore({ dataDir: session.dir });
    return { runtime: await session.open({ nodeId, store }), store };
  }

  it('boot recovers only the agents that need it; a lazily loaded agent then behaves as before the restart', async () => {
    const first = await session.open({ nodeId: 'one' });
    await first.createAgent({ agent_id: 'quiet' });
    await first.createAgent({ agent_id: 'busy' });
    await untilAsleep(first, 'quiet');
    const before = await promptCycle(first, 'quiet', 'hello');
    // A task still running at shutdown is left open in the records: a restart must interrupt it.
    await first.execCommand('busy', { cmd: 'sleep 30', summary: 'outlives the runtime', accepts_input: false });
    await eventually(async () => (await first.listTasks('busy'))[0]?.status === 'running' || undefined);

    const { runtime, store } = await reopen('two');
    const bootLoads = [...store.loads];
    expect(bootLoads).toEqual(['busy']);
    const task = await eventually(async () => (await eventsOfType(runtime, 'busy', 'task_status_changed')).find((e) => e.payload['status'] === 'interrupted'));
    expect(task.payload['reason']).toBe('runtime_restarted');

    expect(await promptCycle(runtime, 'quiet', 'hello again')).toEqual(before);
    expect(store.loads).toContain('quiet');
    const woken = await eventsOfType(runtime, 'quiet', 'turn_started');
    await runtime.wake('quiet', { reason: 'after restart' });
    await eventually(async () => (await eventsOfType(runtime, 'quiet', 'turn_started')).length > woken.length || undefined);
    await untilAsleep(runtime, 'quiet');
  });

  it('an agent asleep with a prompt queued at shutdown is recovered at boot and runs it unasked', async () => {
    const first = await session.open({ nodeId: 'one' });
    await createAsleep(first, 'pending', 'idle');
    // Closing right after the commit: the scheduler never got to wake the agent.
    await first.prompt('pending', { text: 'left in the queue' });
    await first.close();

    const { runtime, store } = await reopen('two');
    expect([...store.loads]).toEqual(['pending']);
    await eventually(async () => (await eventsOfType(runtime, 'pending', 'turn_finished')).length > 0 || undefined);
    expect(store.loads).not.toContain('idle');
  });

  it('lists every agent from the roster without loading one', async () => {
    const first = await session.open({ nodeId: 'one' });
    await createAsleep(first, 'l1', 'l2');
    await first.control('l2', { action: 'stop' });
    const listed = await first.listAgents({ limit: 10 });

    const { runtime, store } = await reopen('two');
    expect(await runtime.listAgents({ limit: 10 })).toEqual(listed);
    expect(listed.items.map((a) => [a.agent_id, a.status])).toEqual([['l1', 'asleep'], ['l2', 'stopped']]);
    expect(store.loads).toEqual([]);
  });

  it('a timer due on a never-loaded agent fires once after the restart', async () => {
    const first = await session.open({ nodeId: 'one' });
    await first.createAgent({ agent_id: 'sleeper' });
    await untilAsleep(first, 'sleeper');
    const timer = await first.createTimer('sleeper', { duration_ms: 1_500, summary: 'due after boot' });

    const { runtime, store } = await reopen('two');
    expect(store.loads).toEqual([]);
    const tick = await eventually(async () => (await eventsOfType(runtime, 'sleeper', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'timer_fire'));
    expect(tick.payload['model_reentry']).toBe(true);
    await untilAsleep(runtime, 'sleeper');
    // Past any second alarm of the same due time: it fired once.
    await new Promise((r) => setTimeout(r, 300));
    expect((await eventsOfType(runtime, 'sleeper', 'timer_fired')).length).toBe(1);
    expect((await runtime.getTimer('sleeper', timer.id)).fire_count).toBe(1);
  });

  it('the capability URLs of a never-loaded agent work after the restart; a revoked one stays refused', async () => {
    const first = await session.open({ nodeId: 'one' });
    const { external_trigger } = await first.createAgent({ agent_id: 'hooked' });
    const enqueue = await first.createTrigger('hooked', { delivery_mode: 'enqueue_message' });
    const revoked = await first.createTrigger('hooked', { delivery_mode: 'wake_hint' });
    await first.revokeTrigger('hooked', revoked.trigger.id);
    await untilAsleep(first, 'hooked');

    const { runtime, store } = await reopen('two');
    expect(store.loads).toEqual([]);
    await expect(runtime.deliverCallback('wake_hint', revoked.token, text('no'))).rejects.toMatchObject({ code: 'forbidden' });
    const woke = await runtime.deliverCallback('wake_hint', external_trigger.token, text('build broke'));
    expect(woke).toMatchObject({ agent_id: 'hooked', disposition: 'triggered' });
    await untilAsleep(runtime, 'hooked');
    const queued = await runtime.deliverCallback('enqueue_message', enqueue.token, text('payload'));
    expect(queued).toMatchObject({ agent_id: 'hooked', disposition: 'enqueued' });
    // The wake's tick and the enqueued message each went through a finished turn (maybe the same one).
    await eventually(async () => (await processedMessageIds(runtime, 'hooked')).size >= 2 || undefined);
    expect((await eventsOfType(runtime, 'hooked', 'callback_delivered')).length).toBe(2);
  });

  it('an agent written before roster entries existed is recovered at boot, gets its entry, and keeps its timer and capability', async () => {
    const first = await session.open({ nodeId: 'one' });
    const { external_trigger } = await first.createAgent({ agent_id: 'legacy' });
    await first.createAgent({ agent_id: 'modern' });
    await untilAsleep(first, 'legacy');
    await untilAsleep(first, 'modern');
    const timer = await first.createTimer('legacy', { duration_ms: 1_500 });
    const summary = await first.getSummary('legacy');
    await first.close();
    dropRosterEntry(session.dir, 'legacy');
    const lister = new LowdbStore({ dataDir: session.dir });
    await lister.open();
    expect((await lister.listRoster()).map((e) => [e.agent_id, e.roster === null])).toEqual([['legacy', true], ['modern', false]]);
    await lister.close();

    const { runtime, store } = await reopen('two');
    expect(store.loads).toEqual(['legacy']);
    expect(await runtime.getSummary('legacy')).toEqual(summary);
    const delivered = await runtime.deliverCallback('wake_hint', external_trigger.token, text('still reachable'));
    expect(delivered.disposition).toBe('triggered');
    await eventually(async () => (await runtime.getTimer('legacy', timer.id)).status === 'completed' || undefined);
    // Asleep again after the timer's turn, not before it started.
    await eventually(async () => (await eventsOfType(runtime, 'legacy', 'continuation_resolved')).find((e) => e.payload['trigger_kind'] === 'timer_fire'));
    await untilAsleep(runtime, 'legacy');
    await runtime.close();
    const reader = new LowdbStore({ dataDir: session.dir });
    await reader.open();
    const entry = (await reader.listRoster()).find((e) => e.agent_id === 'legacy');
    await reader.close();
    expect(entry?.roster).toMatchObject({ listing: { status: 'asleep', phase: 'sleeping' }, needs_recovery: false });
    expect(entry?.roster).not.toHaveProperty('next_timer_at');
  });
});

describe('retiring quiet agents', () => {
  const session = runtimeSession();

  it('keeps the most recently settled quiet agents loaded, up to residentQuietAgents', async () => {
    const store = new RecordingStore({ dataDir: session.dir });
    const runtime = await session.open({ store, residentQuietAgents: 2 });
    for (const id of ['q1', 'q2', 'q3']) {
      await runtime.createAgent({ agent_id: id });
      await untilAsleep(runtime, id);
    }
    const loadsOf = (id: string) => store.loads.filter((loaded) => loaded === id).length;
    const before = { q1: loadsOf('q1'), q3: loadsOf('q3') };
    // q1 settled first, so it retired when q3 settled: its next read loads it again.
    await eventually(async () => {
      await runtime.getSummary('q1');
      return loadsOf('q1') > before.q1 || undefined;
    });
    await runtime.getSummary('q3');
    expect(loadsOf('q3')).toBe(before.q3);
  });

  it('a stopped agent holds no actor and retires like a sleeping one; Start brings it back', async () => {
    const store = new RecordingStore({ dataDir: session.dir });
    const runtime = await session.open({ store, residentQuietAgents: 0 });
    await runtime.createAgent({ agent_id: 'halted' });
    await untilAsleep(runtime, 'halted');
    await runtime.prompt('halted', { text: 'queued before the stop' });
    const stopped = await runtime.control('halted', { action: 'stop' });
    expect(stopped.agent.status).toBe('stopped');
    // Retiring needs the actor gone: a read after it loads the document again.
    const loads = store.loads.length;
    await eventually(async () => {
      await runtime.getSummary('halted');
      return store.loads.length > loads || undefined;
    });
    const turns = async () => (await eventsOfType(runtime, 'halted', 'turn_finished')).length;
    expect(await turns()).toBe(0);
    const started = await runtime.control('halted', { action: 'start' });
    expect(started.agent.status).not.toBe('stopped');
    // The message queued before the stop still gets its turn, on the actor rehydrated from the snapshot.
    await eventually(async () => (await turns()) >= 1 || undefined);
  });

  it('an agent evicted after it fell asleep reloads with the same summary and event log', async () => {
    const store = new RecordingStore({ dataDir: session.dir });
    const runtime = await session.open({ store, residentQuietAgents: 0 });
    await runtime.createAgent({ agent_id: 'evicted' });
    await untilAsleep(runtime, 'evicted');
    await runtime.createTimer('evicted', { duration_ms: 3_600_000, summary: 'kept across the eviction' });
    await promptCycle(runtime, 'evicted', 'remember this');
    const summary = await runtime.getSummary('evicted');
    const events = await allEvents(runtime, 'evicted');
    // Each read of a retired agent loads its document again.
    const reloaded = await eventually(async () => {
      const loads = store.loads.length;
      const again = await runtime.getSummary('evicted');
      return store.loads.length > loads ? again : undefined;
    });
    expect(reloaded).toEqual(summary);
    expect(await allEvents(runtime, 'evicted')).toEqual(events);
    expect(await promptCycle(runtime, 'evicted', 'and again')).toContain('turn_started');
  });

  it('operations racing the retirement run in order on the current records, none lost', async () => {
    const runtime = await session.open({ residentQuietAgents: 0 });
    await runtime.createAgent({ agent_id: 'racer' });
    const seen: AgentEvent[] = [];
    runtime.subscribe('racer', (event) => seen.push(event));
    const prompts: string[] = [];
    for (let round = 0; round < 8; round++) {
      await untilAsleep(runtime, 'racer');
      // Let the retirement check get queued, then race it with a burst of operations.
      await new Promise((r) => setImmediate(r));
      const [accepted] = await Promise.all([runtime.prompt('racer', { text: `round ${round}` }), runtime.getSummary('racer'), runtime.createTimer('racer', { duration_ms: 3_600_000, summary: `timer ${round}` })]);
      prompts.push(accepted.message_id);
    }
    // Every prompt went through a finished turn (two that meet in the inbox share one).
    await eventually(async () => {
      const processed = await processedMessageIds(runtime, 'racer');
      return prompts.every((id) => processed.has(id)) || undefined;
    });
    await untilAsleep(runtime, 'racer');
    expect((await runtime.listTimers('racer')).map((t) => t.summary)).toEqual(Array.from({ length: 8 }, (_, i) => `timer ${i}`));
    const logged = await allEvents(runtime, 'racer');
    expect(logged.map((e) => e.event_seq)).toEqual(logged.map((_, i) => i + 1));
    expect(seen.map((e) => e.event_seq)).toEqual(logged.slice(logged.length - seen.length).map((e) => e.event_seq));
  });
});

describe('the roster in the data directory', () => {
  const session = runtimeSession();

  it('holds a small entry per agent that never needs the document', async () => {
    const runtime = await session.open();
    await runtime.createAgent({ agent_id: 'small' });
    await untilAsleep(runtime, 'small');
    await runtime.close();
    const names = readdirSync(join(session.dir, 'agents'));
    expect(names).toEqual(['small']);
    const record = JSON.parse(readFileSync(join(session.dir, 'agents', 'small', 'doc.json'), 'utf8')) as { roster: unknown };
    expect(record.roster).toMatchObject({ listing: { status: 'asleep', phase: 'sleeping' }, needs_recovery: false });
    expect((record.roster as { trigger_hashes: string[] }).trigger_hashes).toHaveLength(1);
    expect(JSON.stringify(record.roster).length).toBeLessThan(300);
  });
});
