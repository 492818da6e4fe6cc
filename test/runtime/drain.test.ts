import { describe, expect, it } from 'vitest';
import type { AgentEvent, MessageEnvelope, TurnClaim } from '../../src/domain/index.js';
import { reasonChain } from '../../src/runtime/reason-chain.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { LowdbStore } from '../../src/store/index.js';
import { allEvents, eventually, runtimeSession } from './helpers.js';

/** The agent's queue as its last durable commit on disk has it (read once the runtime is closed). */
async function storedQueue(dataDir: string, agentId: string): Promise<MessageEnvelope[]> {
  const store = new LowdbStore({ dataDir });
  await store.open();
  try {
    const stored = await store.loadAgent(agentId);
    return (stored?.doc as { queue: MessageEnvelope[] }).queue;
  } finally {
    await store.close();
  }
}

/**
 * Issue 18, "a turn drains what it may": a turn takes the queued messages that may share it
 * (`mayJoinTurn`), and its runner takes operator interjections at its safe points. Real lowdb
 * files on disk; the turns of `http_worker` agents are claimed through the runtime's API.
 */
describe('a turn drains what it may', () => {
  const session = runtimeSession();

  /** The next offered turn of `agentId`, claimed. */
  const claim = async (runtime: Runtime, agentId: string): Promise<TurnClaim> =>
    eventually(async () => (await runtime.claimTurn({ agent_ids: [agentId], wait_ms: 200 })) ?? undefined, 10_000, `a turn of ${agentId}`);

  /** An http_worker agent whose first turn (on `held`) is claimed and held: what is queued now stays queued. */
  async function heldAgent(runtime: Runtime, agentId: string): Promise<TurnClaim> {
    await runtime.createAgent({ agent_id: agentId, config: { turn_runner: 'http_worker', model: 'external' } });
    await runtime.prompt(agentId, { text: 'held' });
    return claim(runtime, agentId);
  }

  const textsOf = (turn: TurnClaim) => turn.messages.map((m) => (m.body?.type === 'text' ? m.body.text : null));
  const ofType = (events: AgentEvent[], type: string) => events.filter((e) => e.type === type);

  it('claims the queued messages in lane order, FIFO within a lane, up to the bound; each has its decision, continuation and events, and the reason chain rebuilds', async () => {
    const runtime = await session.open({ turnMaxMessages: 3 });
    const held = await heldAgent(runtime, 'batch');
    const ids = [
      await runtime.enqueue('batch', { kind: 'webhook_event', priority: 'background', text: 'bg-1' }),
      await runtime.enqueue('batch', { kind: 'webhook_event', priority: 'normal', text: 'normal-1' }),
      await runtime.enqueue('batch', { kind: 'webhook_event', priority: 'next', text: 'next-1' }),
      await runtime.enqueue('batch', { kind: 'webhook_event', priority: 'normal', text: 'normal-2' }),
      await runtime.prompt('batch', { text: 'interject-1' }),
    ].map((r) => r.message_id);
    await runtime.completeTurn(held.run_id, { claim_id: held.claim_id, actions: [] });

    const first = await claim(runtime, 'batch');
    expect(textsOf(first)).toEqual(['interject-1', 'next-1', 'normal-1']);
    // The bound left two queued: the turn after takes them, in order.
    expect((await runtime.getState('batch')).queue.filter((m) => m.status === 'queued').map((m) => m.id).sort()).toEqual([ids[0], ids[3]].sort());
    await runtime.completeTurn(first.run_id, { claim_id: first.claim_id, actions: [] });
    const second = await claim(runtime, 'batch');
    expect(textsOf(second)).toEqual(['normal-2', 'bg-1']);
    await runtime.completeTurn(second.run_id, { claim_id: second.claim_id, actions: [] });
    await eventually(async () => (await runtime.getState('batch')).queue.length === 0 || undefined);

    const events = await allEvents(runtime, 'batch');
    const started = ofType(events, 'turn_started').find((e) => e.payload['run_id'] === first.run_id);
    expect(started?.payload).toMatchObject({ message_id: first.messages[0]?.id, message_ids: first.messages.map((m) => m.id) });
    for (const message of [...first.messages, ...second.messages]) {
      // Its own decision, recorded before its turn started, and its own continuation resolution.
      const decision = events.find((e) => e.type === 'scheduler_decision' && e.payload['message_id'] === message.id);
      const resolved = events.find((e) => e.type === 'continuation_resolved' && e.payload['message_id'] === message.id);
      const runStarted = ofType(events, 'turn_started').find((e) => (e.payload['message_ids'] as string[]).includes(message.id));
      expect(decision?.payload).toMatchObject({ kind: 'start_model_turn', boundary: 'message_processing' });
      expect(resolved?.payload).toMatchObject({ model_reentry: true });
      expect(decision && runStarted && decision.event_seq < runStarted.event_seq).toBe(true);
    }
    // One TURN.START and one TURN.FINISHED per turn, not per message, and the chain has no gap.
    const chain = reasonChain(events);
    expect(chain.gaps).toEqual([]);
    expect(chain.transitions.filter((t) => t.reason.startsWith('turn for ')).map((t) => t.reason)).toEqual([
      `turn for operator_prompt ${held.messages[0]?.id}`,
      `turn for operator_prompt ${ids[4]} and 2 more`,
      `turn for webhook_event ${ids[3]} and 1 more`,
    ]);
    // The decision is in the same commit as the turn's start: no second checkpoint inside the claim.
    const decision = events.find((e) => e.type === 'scheduler_decision' && e.payload['message_id'] === ids[4]);
    const start = events.find((e) => e.type === 'transition_committed' && (e.payload['reason'] as string).includes(ids[4] as string));
    expect(decision?.event_seq).toBeLessThan(start?.event_seq ?? 0);
  });

  it('leaves queued what may not share the turn: a message bound to another work item ends the batch, and the messages behind it wait too', async () => {
    const runtime = await session.open();
    const held = await heldAgent(runtime, 'bound');
    const item = await runtime.createWorkItem('bound', { objective: 'one thing' });
    const unbound = await runtime.prompt('bound', { text: 'unbound-1' });
    const other = await runtime.prompt('bound', { text: 'bound-to-item', work_item_id: item.id });
    const behind = await runtime.prompt('bound', { text: 'unbound-2' });
    await runtime.completeTurn(held.run_id, { claim_id: held.claim_id, actions: [] });

    const first = await claim(runtime, 'bound');
    expect(first.messages.map((m) => m.id)).toEqual([unbound.message_id]);
    const queue = (await runtime.getState('bound')).queue;
    expect(queue.filter((m) => m.status === 'queued').map((m) => m.id)).toEqual([other.message_id, behind.message_id]);
    await runtime.completeTurn(first.run_id, { claim_id: first.claim_id, actions: [] });
    // The bound one heads the next turn; the unbound one behind it joins the item's turn.
    const second = await claim(runtime, 'bound');
    expect(second.messages.map((m) => m.id)).toEqual([other.message_id, behind.message_id]);
  });

  it('the scripted runner takes an operator prompt that arrives mid-turn at its safe point, under the same run id; a webhook waits for the next turn', async () => {
    const runtime = await session.open();
    await runtime.createAgent({ agent_id: 'holder' });
    const first = await runtime.prompt('holder', { text: '/hold\nfirst' });
    const started = await eventually(async () => ofType(await allEvents(runtime, 'holder'), 'turn_started').find((e) => e.payload['message_id'] === first.message_id));
    const runId = started.payload['run_id'] as string;
    const webhook = await runtime.enqueue('holder', { kind: 'webhook_event', priority: 'normal', text: 'not an interjection' });
    const second = await runtime.prompt('holder', { text: 'second\n/enqueue follow-up' });
    const finished = await eventually(async () => ofType(await allEvents(runtime, 'holder'), 'turn_finished').find((e) => e.payload['run_id'] === runId));
    expect(finished.payload['text']).toBe('first\nsecond');
    const events = await allEvents(runtime, 'holder');
    expect(ofType(events, 'turn_interjected').map((e) => e.payload)).toEqual([{ run_id: runId, message_ids: [second.message_id], turn_index: started.payload['turn_index'] }]);
    expect(events.find((e) => e.type === 'scheduler_decision' && e.payload['message_id'] === second.message_id)?.payload).toMatchObject({ kind: 'start_model_turn' });
    expect(events.find((e) => e.type === 'continuation_resolved' && e.payload['message_id'] === second.message_id)?.payload).toMatchObject({ trigger_kind: 'operator_input' });
    // The webhook and the follow-up the turn enqueued run after it, in a turn of their own.
    const next = await eventually(async () => ofType(await allEvents(runtime, 'holder'), 'turn_started').find((e) => (e.payload['message_ids'] as string[]).includes(webhook.message_id)));
    expect(next.payload['run_id']).not.toBe(runId);
    await eventually(async () => ofType(await allEvents(runtime, 'holder'), 'turn_finished').some((e) => e.payload['run_id'] === next.payload['run_id']) || undefined);
    expect(reasonChain(await allEvents(runtime, 'holder')).gaps).toEqual([]);
    await runtime.close();
    const queue = await storedQueue(session.dir, 'holder');
    expect(queue.map((m) => m.status)).toEqual(['processed', 'processed', 'processed', 'processed']);
    expect(queue.filter((m) => m.run_id === runId).map((m) => m.id).sort()).toEqual([first.message_id, second.message_id].sort());
  });

  it('a restart in the middle of a batch marks every message of it interrupted, and the next turn takes them again', async () => {
    let runtime = await session.open();
    const held = await heldAgent(runtime, 'crash');
    const ids = [await runtime.prompt('crash', { text: 'a' }), await runtime.prompt('crash', { text: 'b' }), await runtime.prompt('crash', { text: 'c' })].map((r) => r.message_id);
    await runtime.completeTurn(held.run_id, { claim_id: held.claim_id, actions: [] });
    const batch = await claim(runtime, 'crash');
    expect(batch.messages.map((m) => m.id)).toEqual(ids);
    runtime = await session.open();
    // Recovery ran at open: the batch is interrupted (replayable), its run aborted; the scheduler
    // may have claimed it again already, under a new run, but never left it under the dead one.
    const replayed = (await runtime.getState('crash')).queue.filter((m) => ids.includes(m.id));
    expect(replayed.map((m) => m.id)).toEqual(ids);
    for (const m of replayed) expect(m.status === 'interrupted' ? m.run_id === batch.run_id : m.status === 'dequeued' && m.run_id !== batch.run_id).toBe(true);
    const events = await allEvents(runtime, 'crash');
    expect(events.find((e) => e.type === 'turn_finished' && e.payload['run_id'] === batch.run_id)?.payload).toMatchObject({ terminal: 'aborted', reason: 'runtime_restarted' });
    const again = await claim(runtime, 'crash');
    expect(again.run_id).not.toBe(batch.run_id);
    expect(again.messages.map((m) => m.id)).toEqual(ids);
    await runtime.completeTurn(again.run_id, { claim_id: again.claim_id, actions: [] });
    await eventually(async () => (await runtime.getState('crash')).queue.length === 0 || undefined);
    await runtime.close();
    expect((await storedQueue(session.dir, 'crash')).filter((m) => ids.includes(m.id)).map((m) => [m.status, m.run_id])).toEqual(ids.map(() => ['processed', again.run_id]));
  });

  it('an abort of a batch marks every message of it aborted', async () => {
    const runtime = await session.open();
    const held = await heldAgent(runtime, 'aborter');
    const ids = [await runtime.prompt('aborter', { text: 'a' }), await runtime.prompt('aborter', { text: 'b' })].map((r) => r.message_id);
    await runtime.completeTurn(held.run_id, { claim_id: held.claim_id, actions: [] });
    const batch = await claim(runtime, 'aborter');
    expect(batch.messages.map((m) => m.id)).toEqual(ids);
    await runtime.abortRun('aborter', { run_id: batch.run_id });
    await runtime.close();
    const queue = await storedQueue(session.dir, 'aborter');
    expect(queue.filter((m) => ids.includes(m.id)).map((m) => [m.status, m.run_id])).toEqual([['aborted', batch.run_id], ['aborted', batch.run_id]]);
  });

  it('a turn offered again after its lease expired carries the messages that joined it at a heartbeat', async () => {
    const runtime = await session.open({ turnLeaseMs: 300 });
    const held = await heldAgent(runtime, 'reoffer');
    const joined = await runtime.prompt('reoffer', { text: 'joined' });
    const beat = await runtime.heartbeatTurn(held.run_id, { claim_id: held.claim_id, take_messages: true });
    expect(beat.messages?.map((m) => m.id)).toEqual([held.messages[0]?.id, joined.message_id]);
    // No more heartbeats: the lease runs out and the same run is offered again, with both messages.
    const again = await eventually(async () => {
      const claim = await runtime.claimTurn({ agent_ids: ['reoffer'], wait_ms: 100 });
      return claim?.run_id === held.run_id ? claim : undefined;
    });
    expect(again.claim_id).not.toBe(held.claim_id);
    expect(again.messages.map((m) => m.id)).toEqual([held.messages[0]?.id, joined.message_id]);
  });

  it('turnMaxMessages 1 gives a turn per message', async () => {
    const runtime = await session.open({ turnMaxMessages: 1 });
    const held = await heldAgent(runtime, 'single');
    await runtime.prompt('single', { text: 'a' });
    await runtime.prompt('single', { text: 'b' });
    await runtime.completeTurn(held.run_id, { claim_id: held.claim_id, actions: [] });
    const first = await claim(runtime, 'single');
    expect(textsOf(first)).toEqual(['a']);
    // Not taken at a safe point either: the bound counts the whole turn.
    const heartbeat = await runtime.heartbeatTurn(first.run_id, { claim_id: first.claim_id, take_messages: true });
    expect(heartbeat.messages?.map((m) => m.id)).toEqual([first.messages[0]?.id]);
  });
});
