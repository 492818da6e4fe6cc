import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reasonChain } from '../../src/runtime/reason-chain.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { allEvents, eventually, openRuntime, tempDataDir, untilAsleep, runtimeSession } from './helpers.js';

describe('transitions are records (seed 002)', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('rebuilds the reason chain from the event log alone, continuous from created to terminated', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'chain' });
    await untilAsleep(runtime, 'chain');
    await runtime.control('chain', { action: 'stop' });
    await runtime.control('chain', { action: 'start' });
    await untilAsleep(runtime, 'chain');
    await runtime.terminate('chain');
    const chain = reasonChain(await allEvents(runtime, 'chain'));
    expect(chain.gaps).toEqual([]);
    expect(chain.transitions[0]?.from_state).toBe('created');
    expect(chain.transitions.at(-1)?.to_state).toBe('terminated');
    expect(chain.transitions.map((t) => t.seq)).toEqual(chain.transitions.map((_, i) => i + 1));
    expect(chain.transitions).toEqual(await runtime.listTransitions('chain', { limit: 512 }));
    for (const t of chain.transitions) expect(t.reason.length).toBeGreaterThan(0);
    // Transitions with side effects carry the five protocol phases, in order.
    const initialized = chain.transitions.find((t) => t.from_state === 'initializing' && t.to_phase === 'active');
    expect(initialized?.phases.map((p) => p.phase)).toEqual([
      'transition_requested',
      'guard_checked',
      'transition_prepared',
      'side_effects_applied',
      'transition_committed',
    ]);
    const terminated = chain.transitions.find((t) => t.to_state === 'terminated');
    expect(terminated?.phases.map((p) => p.phase).at(-1)).toBe('transition_committed');
  });

  it('commits a transition_id once, refuses stale versions, illegal targets and guard refusals without changing anything', async () => {
    runtime = await session.open();
    await runtime.createAgent({ agent_id: 'proto' });
    await untilAsleep(runtime, 'proto');
    const version = (await runtime.getSummary('proto')).state_version;
    const request = { transition_id: 'wake-1', to: 'active' as const, reason: 'operator wants it up', expected_version: version };
    const first = await runtime.transition('proto', request);
    expect(first.replayed).toBe(false);
    // The request's own record enters Waking; the one leaving it (naming the request) reaches Active.
    expect(first.record.to_phase).toBe('waking');
    const closing = (await runtime.listTransitions('proto', { limit: 512 })).find((t) => t.evidence_refs.includes('transition:wake-1'));
    expect(closing).toMatchObject({ from_state: 'waking', to_phase: 'active' });
    expect(first.record.phases.map((p) => p.phase)).toEqual(['transition_requested', 'guard_checked', 'transition_prepared', 'side_effects_applied', 'transition_committed']);
    const again = await runtime.transition('proto', request);
    expect(again.replayed).toBe(true);
    expect(again.record).toEqual(first.record);
    const eventsBefore = (await allEvents(runtime, 'proto')).length;
    const stale = runtime.transition('proto', { transition_id: 'wake-2', to: 'evolving', reason: 'x', expected_version: version });
    await expect(stale).rejects.toMatchObject({ code: 'version_conflict' });
    await untilAsleep(runtime, 'proto');
    const now = (await runtime.getSummary('proto')).state_version;
    const afterSleep = (await allEvents(runtime, 'proto')).length;
    expect(afterSleep).toBeGreaterThanOrEqual(eventsBefore);
    await expect(runtime.transition('proto', { transition_id: 'evolve-asleep', to: 'evolving', reason: 'x', expected_version: now })).rejects.toMatchObject({ code: 'illegal_transition' });
    // A running task keeps the agent awake: the canSleep guard refuses an explicit sleep request.
    const task = await runtime.execCommand('proto', { summary: 'keeps it awake', cmd: 'sleep 5', accepts_input: false });
    await eventually(async () => ((await runtime.getTask('proto', task.id)).status === 'running' ? true : undefined));
    const started = (await runtime.getSummary('proto')).state_version;
    await expect(runtime.transition('proto', { transition_id: 'sleep-now', to: 'sleeping', reason: 'x', expected_version: started })).rejects.toMatchObject({ code: 'guard_rejected', details: { guard: 'canSleep' } });
    expect((await runtime.listTransitions('proto', { limit: 512 })).some((t) => t.transition_id === 'sleep-now')).toBe(false);
  });
});

describe('agent documents stay small', () => {
  it('keep recent and client-named transition records only, oldest first; the chain stays whole in the event log', async () => {
    const dir = tempDataDir();
    const runtime = await openRuntime(dir.dir);
    try {
      const { request, named } = await wokenByClient(runtime, 'busy-doc', 'client-named-wake');
      for (let i = 0; i < 25; i++) {
        await runtime.prompt('busy-doc', { text: `turn ${i}` });
        await eventually(async () => ((await runtime.getSummary('busy-doc')).agent.turn_index >= i + 1 ? true : undefined));
      }
      await untilAsleep(runtime, 'busy-doc');
      const chain = await runtime.listTransitions('busy-doc', { limit: 512 });
      expect(chain.length).toBeGreaterThan(70);
      await runtime.close();
      const stored = storedDoc(dir.dir, 'busy-doc');
      const kept = stored.doc.transitions as Array<{ transition_id: string; seq: number }>;
      // The client's record, the one that closed it (its replay answers with that one's phases), the newest 64.
      const closer = chain.find((t) => t.evidence_refs.includes('transition:client-named-wake'));
      expect(closer?.seq).toBe(named.record.seq + 1);
      expect(kept.map((t) => t.transition_id)).toEqual(['client-named-wake', closer?.transition_id, ...chain.slice(-64).map((t) => t.transition_id)]);
      const reopened = await openRuntime(dir.dir);
      try {
        expect(await reopened.transition('busy-doc', request)).toEqual({ record: named.record, replayed: true });
      } finally {
        await reopened.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('a document written when transitions were a record keyed by id still loads and replays them', async () => {
    const dir = tempDataDir();
    let runtime = await openRuntime(dir.dir);
    try {
      const { request, named } = await wokenByClient(runtime, 'legacy', 'legacy-wake');
      await untilAsleep(runtime, 'legacy');
      await runtime.close();
      const stored = storedDoc(dir.dir, 'legacy');
      const list = stored.doc.transitions as Array<{ transition_id: string; seq: number }>;
      // Keyed by id in reverse order: the load must order them by seq again.
      stored.doc.transitions = Object.fromEntries([...list].reverse().map((t) => [t.transition_id, t]));
      writeFileSync(docPath(dir.dir, 'legacy'), JSON.stringify(stored));
      runtime = await openRuntime(dir.dir);
      expect(await runtime.transition('legacy', request)).toEqual({ record: named.record, replayed: true });
      await runtime.prompt('legacy', { text: 'after the upgrade' });
      await eventually(async () => ((await runtime.getSummary('legacy')).agent.turn_index >= 1 ? true : undefined));
      await untilAsleep(runtime, 'legacy');
      await runtime.close();
      const rewritten = storedDoc(dir.dir, 'legacy').doc.transitions as Array<{ seq: number }>;
      expect(Array.isArray(rewritten)).toBe(true);
      expect(rewritten.map((t) => t.seq)).toEqual(rewritten.map((_, i) => (rewritten[0]?.seq ?? 0) + i));
      expect(rewritten.length).toBeGreaterThan(list.length);
    } finally {
      await runtime.close().catch(() => undefined);
      dir.cleanup();
    }
  });
});

/** A new agent, asleep, then woken by a client-named transition: the request (to replay) and its answer. */
async function wokenByClient(runtime: Runtime, agentId: string, transitionId: string) {
  await runtime.createAgent({ agent_id: agentId });
  await untilAsleep(runtime, agentId);
  const request = { transition_id: transitionId, to: 'active' as const, reason: 'a client wakes it', expected_version: (await runtime.getSummary(agentId)).state_version };
  return { request, named: await runtime.transition(agentId, request) };
}

function docPath(dataDir: string, agentId: string): string {
  return join(dataDir, 'agents', agentId, 'doc.json');
}

function storedDoc(dataDir: string, agentId: string): { doc: Record<string, unknown> } {
  return JSON.parse(readFileSync(docPath(dataDir, agentId), 'utf8')) as { doc: Record<string, unknown> };
}
