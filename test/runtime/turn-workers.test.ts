import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { eventsOfType, eventually, runtimeSession } from './helpers.js';

describe('turn workers: HTTP clients as the agent brain', () => {
  const session = runtimeSession();
  let runtime: Runtime;

  it('offers a turn, applies a completion once, re-offers after lease expiry and refuses the late completion', async () => {
    runtime = await session.open({ turnLeaseMs: 200 });
    await runtime.createAgent({ agent_id: 'remote', config: { turn_runner: 'http_worker', model: 'external' } });
    expect(await runtime.claimTurn({ wait_ms: 0 })).toBeNull();
    const waiting = runtime.claimTurn({ agent_ids: ['remote'], wait_ms: 5_000 });
    await runtime.prompt('remote', { text: 'please run ls' });
    const first = await waiting;
    expect(first?.agent_id).toBe('remote');
    expect(first?.messages[0]?.kind).toBe('operator_prompt');
    expect((await runtime.getSummary('remote')).agent.status).toBe('awake_running');
    // The first worker goes silent past its lease; the turn is offered again.
    await new Promise((r) => setTimeout(r, 300));
    const second = await runtime.claimTurn({ wait_ms: 1_000 });
    expect(second).not.toBeNull();
    // One run, one id (the agent's current run); the re-offer is a new claim of it.
    const runId = (await runtime.getSummary('remote')).agent.current_run_id as string;
    expect([first?.run_id, second?.run_id]).toEqual([runId, runId]);
    expect(second?.claim_id).not.toBe(first?.claim_id);
    const late = { claim_id: first?.claim_id as string };
    await expect(runtime.completeTurn(runId, { ...late, actions: [] })).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(runtime.heartbeatTurn(runId, late)).rejects.toMatchObject({ code: 'lease_lost' });
    const held = { claim_id: second?.claim_id as string };
    const beat = await runtime.heartbeatTurn(runId, held);
    expect(Date.parse(beat.lease_expires_at)).toBeGreaterThan(Date.now());
    await expect(runtime.heartbeatTurn('run_other', held)).rejects.toMatchObject({ code: 'lease_lost' });
    const done = await runtime.completeTurn(runId, { ...held, actions: [{ type: 'exec_command', cmd: 'echo remote', wait: true }], text: 'running it' });
    expect(done.applied).toBe(true);
    await expect(runtime.completeTurn(runId, { ...held, actions: [] })).rejects.toMatchObject({ code: 'lease_lost' });
    // Applied exactly once: one task was created.
    const created = (await eventsOfType(runtime, 'remote', 'task_status_changed')).filter((e) => e.payload['status'] === 'queued');
    expect(created).toHaveLength(1);
    // The task result re-enters as a new turn offered to workers.
    const reentry = await runtime.claimTurn({ wait_ms: 5_000 });
    expect(reentry?.messages[0]?.kind).toBe('task_result');
    expect(reentry?.continuation?.class).toBe('resume_expected_wait');
    await runtime.completeTurn(reentry?.run_id as string, { claim_id: reentry?.claim_id as string, actions: [] });
    await eventually(async () => ((await runtime.getSummary('remote')).agent.status === 'asleep' ? true : undefined));
  });
});
