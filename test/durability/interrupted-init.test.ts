import { afterEach, describe, expect, it } from 'vitest';
import type { AgentListEntry, AgentSummary, TransitionRecord } from '../../src/domain/index.js';
import { agentIds, readAgent, readEvents } from './fixtures/data-dir.js';
import { sleep, TempDirs, transitionsOf, Workers } from './fixtures/harness.js';
import { Prng, seedFromEnv } from './fixtures/prng.js';
import type { CrashRuleInput } from './fixtures/protocol.js';
import type { RuntimeWorker } from './fixtures/worker-client.js';

/**
 * Seed 002 acceptance 1: retrying an interrupted initialization with the same Idempotency-Key /
 * agent id never creates a second identity.
 */

interface Created {
  agent: AgentSummary;
  replayed: boolean;
}

const dirs = new TempDirs();
let workers: Workers;

afterEach(async () => {
  await workers?.cleanup();
  await dirs.cleanup();
});

/** What a crash left on disk for `agentId`: its phase, or `absent`. */
async function leftOnDisk(dataDir: string, agentId: string | null): Promise<string> {
  if (agentId === null) return (await agentIds(dataDir)).length === 0 ? 'absent' : 'present';
  const agent = await readAgent(dataDir, agentId);
  return agent ? agent.doc.state.phase : 'absent';
}

async function expectOneInitializedIdentity(worker: RuntimeWorker, dataDir: string, agentId: string): Promise<void> {
  const transitions = await transitionsOf(worker, agentId);
  const initialized = transitions.filter((t: TransitionRecord) => t.from_phase === 'initializing' && t.to_phase === 'active');
  expect(initialized, `${agentId}: initializing → active exactly once`).toHaveLength(1);
  const listed = (await worker.call<{ items: AgentListEntry[] }>('listAgents', { limit: 500 })).items.filter((a) => a.agent_id === agentId);
  expect(listed).toHaveLength(1);
  const raw = await readAgent(dataDir, agentId);
  expect(raw?.doc.identity.identity_version).toBe(1);
  // The default capability is provisioned once, however often initialization was resumed.
  const triggers = (await readEvents(dataDir, agentId)).filter((e) => e.type === 'trigger_created');
  expect(triggers, `${agentId}: one default trigger`).toHaveLength(1);
  expect(raw?.doc.snapshots.some((s) => s.kind === 'initial')).toBe(true);
}

describe('scenario 1: interrupted initialization, retried with the same key', () => {
  it('SIGKILL at several delays after createAgent({agent_id}) was sent: the retry yields one identity, active', async () => {
    const seed = seedFromEnv();
    const rng = new Prng(seed);
    console.log(`interrupted-init seed=${seed}`);
    const dataDir = await dirs.make();
    workers = new Workers({ dataDir, nodeId: 'init', leaseTtlMs: 300 });
    const delays = [0, 1, 3, 5, 10, 20, 50, rng.int(0, 80)];
    const left: string[] = [];
    let worker = await workers.open();
    for (const [i, delay] of delays.entries()) {
      const agentId = `init-${i}`;
      const request = { agent_id: agentId, mission: `interrupted after ${delay} ms` };
      const options = { idempotency_key: `create-${agentId}` };
      const { reply } = worker.send({ op: 'call', method: 'createAgent', args: [request, options] });
      let acknowledged = false;
      void reply.then(() => {
        acknowledged = true;
      });
      await sleep(delay);
      await worker.kill();
      left.push(`${delay}ms:${acknowledged ? 'acked' : await leftOnDisk(dataDir, agentId)}`);
      worker = await workers.open();
      const retried = await worker.call<Created>('createAgent', request, options);
      expect(retried.agent.identity.agent_id).toBe(agentId);
      expect(['active', 'sleeping']).toContain(retried.agent.phase);
      const again = await worker.call<Created>('createAgent', request, options);
      expect(again.replayed).toBe(true);
      await expectOneInitializedIdentity(worker, dataDir, agentId);
    }
    console.log(`interrupted-init: crash left ${left.join(', ')}`);
    expect(await agentIds(dataDir)).toEqual(delays.map((_, i) => `init-${i}`).sort());
  });

  it('without agent_id, the key alone names the identity: one agent per key after SIGKILL + retry', async () => {
    const dataDir = await dirs.make();
    workers = new Workers({ dataDir, nodeId: 'key', leaseTtlMs: 300 });
    let worker = await workers.open();
    const ids = new Set<string>();
    for (const [i, delay] of [0, 2, 6, 15].entries()) {
      const request = { mission: `keyed ${i}` };
      const options = { idempotency_key: `only-key-${i}` };
      worker.send({ op: 'call', method: 'createAgent', args: [request, options] });
      await sleep(delay);
      await worker.kill();
      worker = await workers.open();
      const first = await worker.call<Created>('createAgent', request, options);
      const second = await worker.call<Created>('createAgent', request, options);
      expect(second.agent.identity.agent_id).toBe(first.agent.identity.agent_id);
      expect(second.replayed).toBe(true);
      ids.add(first.agent.identity.agent_id);
      await expectOneInitializedIdentity(worker, dataDir, first.agent.identity.agent_id);
      expect(await agentIds(dataDir)).toHaveLength(i + 1);
    }
    expect(ids.size).toBe(4);
  });

  /** Crash points at the durable boundaries of initialization (store writes), in protocol order. */
  const crashPoints: Array<{ name: string; rule: CrashRuleInput; left: string }> = [
    { name: 'after the key is recorded, before the identity', rule: { at: 'after_put_global', key_prefix: 'create:' }, left: 'absent' },
    { name: 'before the identity commit', rule: { at: 'before_commit', event: { type: 'agent_created' } }, left: 'absent' },
    { name: 'after the identity commit (Created)', rule: { at: 'after_commit', event: { type: 'agent_created' } }, left: 'created' },
    { name: 'after Initializing is committed', rule: { at: 'after_commit', event: { type: 'transition_committed', payload: { to_phase: 'initializing' } } }, left: 'initializing' },
    {
      name: 'after SideEffectsApplied (trigger + first snapshot durable)',
      rule: { at: 'after_commit', event: { type: 'transition_phase', payload: { phase: 'side_effects_applied' }, payload_contains: ':initialize:' } },
      left: 'initializing',
    },
    { name: 'before Active is committed', rule: { at: 'before_commit', event: { type: 'transition_committed', payload: { to_phase: 'active' } } }, left: 'initializing' },
  ];

  it('crash exactly between initialization phases (fault-injected SIGKILL), then retry: one identity each time', async () => {
    const dataDir = await dirs.make();
    workers = new Workers({ dataDir, nodeId: 'phase', leaseTtlMs: 300 });
    let worker = await workers.open();
    for (const [i, point] of crashPoints.entries()) {
      const agentId = `phase-${i}`;
      const request = { agent_id: agentId, mission: point.name };
      const options = { idempotency_key: `create-${agentId}` };
      await worker.arm([point.rule]);
      const outcome = await worker.attempt('createAgent', request, options).then(
        () => 'acknowledged',
        () => 'killed',
      );
      expect(outcome, point.name).toBe('killed');
      expect((await worker.exited).signal).toBe('SIGKILL');
      expect(await leftOnDisk(dataDir, agentId), point.name).toBe(point.left);
      worker = await workers.open();
      const retried = await worker.call<Created>('createAgent', request, options);
      expect(retried.agent.identity.agent_id).toBe(agentId);
      expect(['active', 'sleeping'], point.name).toContain(retried.agent.phase);
      await expectOneInitializedIdentity(worker, dataDir, agentId);
    }
  });
});
