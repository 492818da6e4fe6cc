import { afterEach, describe, expect, it } from 'vitest';
import { DomainError, textOf } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { LowdbStore, type Commit, type CommitResult } from '../../src/store/index.js';
import { eventually, eventsOfType, tempDataDir, untilAsleep } from './helpers.js';

/**
 * The real lowdb store, but while `holding` every commit waits, in the order it was handed over,
 * until the test passes it on (`releaseNext`: the store writes it) or refuses it (`failNext`).
 */
class HeldLowdb extends LowdbStore {
  holding = false;
  readonly held: Array<{ commit: Commit; pass: () => void; fail: (error: DomainError) => void }> = [];

  override commit(commit: Commit): Promise<CommitResult> {
    if (!this.holding) return super.commit(commit);
    return new Promise((resolve, reject) => {
      this.held.push({ commit, pass: () => super.commit(commit).then(resolve, reject), fail: reject });
    });
  }

  releaseNext(): void {
    this.next().pass();
  }

  failNext(error: DomainError): void {
    this.next().fail(error);
  }

  private next(): (typeof this.held)[number] {
    const entry = this.held.shift();
    if (!entry) throw new Error('no commit held');
    return entry;
  }
}

const types = (commit: Commit | undefined) => commit?.events.map((e) => e.type) ?? [];
const wakes = (commit: Commit | undefined) => commit?.events.some((e) => e.type === 'transition_committed' && e.payload['to_phase'] === 'waking') ?? false;
const quiet = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 30));
};

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function heldAgent(): Promise<{ runtime: Runtime; store: HeldLowdb }> {
  const data = tempDataDir();
  const store = new HeldLowdb({ dataDir: data.dir });
  const runtime = await Runtime.open({ store, dataDir: data.dir, nodeId: 'asked-steps', killGraceMs: 300 });
  cleanups.push(data.cleanup, async () => {
    store.holding = false;
    while (store.held.length) store.releaseNext();
    await runtime.close();
  });
  await runtime.createAgent({ agent_id: 'a', config: { turn_runner: 'http_worker', model: 'external' } });
  await untilAsleep(runtime, 'a');
  return { runtime, store };
}

/**
 * Prompt 'one' durable, its scheduler step asked; prompt 'two' issued before the step starts (so
 * the step waits for it), prompt 'three' issued while the step waits (so it passes the step).
 */
async function stepWaitingBehindTwo(runtime: Runtime, store: HeldLowdb) {
  store.holding = true;
  const one = runtime.prompt('a', { text: 'one' });
  await eventually(() => store.held.length === 1, 5_000, 'the first prompt handed to the store');
  store.releaseNext();
  await one; // answered: the agent's scheduler step is asked (it runs on a later turn of the event loop)
  const two = runtime.prompt('a', { text: 'two' }).catch((e: DomainError) => e);
  await quiet();
  expect(store.held.map((h) => types(h.commit))).toEqual([['message_queued']]);
  const three = runtime.prompt('a', { text: 'three' }).catch((e: DomainError) => e);
  await quiet();
  return { two, three };
}

describe("scheduler steps (durableBefore: 'asked')", () => {
  it('let inputs pass while they wait for the commits before them, build on those inputs without waiting again, and act only once all of it is durable', async () => {
    const { runtime, store } = await heldAgent();
    const { two, three } = await stepWaitingBehindTwo(runtime, store);
    // 'three' was handed to the store while the step waited for 'two': it did not queue behind it.
    expect(store.held.map((h) => types(h.commit))).toEqual([['message_queued'], ['message_queued']]);
    store.releaseNext();
    expect(await two).toMatchObject({ agent_id: 'a' });
    await eventually(() => store.held.length === 2, 5_000, "the step's commit");
    // The step woke the agent on top of 'three', which is still not durable: it did not wait for it.
    const [threeHeld, stepHeld] = store.held;
    expect(wakes(stepHeld?.commit)).toBe(true);
    expect(stepHeld?.commit.expected_version).toBe((threeHeld?.commit.expected_version ?? -1) + 1);
    // Its effect (the turn offered to a worker) waits until every commit up to its own is durable.
    while (store.held.length > 0) {
      expect(await runtime.claimTurn({ wait_ms: 0 })).toBeNull();
      store.releaseNext();
      await quiet();
    }
    expect(await three).toMatchObject({ agent_id: 'a' });
    const claim = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the turn offered');
    // The turn took 'three' too, durable by the time it runs.
    expect(claim.messages.map((m) => textOf(m.body))).toEqual(['one', 'two', 'three']);
  });

  it('a step built on an input whose commit is refused fails with it: nothing of it is committed or run', async () => {
    const { runtime, store } = await heldAgent();
    const { two, three } = await stepWaitingBehindTwo(runtime, store);
    store.releaseNext();
    await two;
    await eventually(() => store.held.length === 2 && wakes(store.held[1]?.commit), 5_000, "the step's commit, built on 'three'");
    store.failNext(new DomainError('store_unavailable', 'disk full'));
    expect(await three).toMatchObject({ code: 'store_unavailable' });
    // The step's commit, built on 'three', is refused by the store too (its base was never written).
    const refused = store.held[0]?.commit;
    store.holding = false;
    store.releaseNext();
    // 'two' asked for another step when it was answered: it runs on what is durable ('one', 'two').
    const claim = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the turn offered');
    expect(claim.messages.map((m) => textOf(m.body))).toEqual(['one', 'two']);
    const queued = (await runtime.getState('a')).queue.map((m) => textOf(m.body));
    expect(queued).toEqual(['one', 'two']);
    // Of the refused step nothing is in the log: one wake, one turn started, from the later step.
    expect(refused?.events.some((e) => e.type === 'turn_started') || wakes(refused)).toBe(true);
    const waking = (await eventsOfType(runtime, 'a', 'transition_committed')).filter((e) => e.payload['to_phase'] === 'waking');
    expect(waking).toHaveLength(1);
    expect(await eventsOfType(runtime, 'a', 'turn_started')).toHaveLength(1);
  });

  it('a step that puts the agent to sleep does not hold the lane while its commit becomes durable', async () => {
    const { runtime, store } = await heldAgent();
    await runtime.prompt('a', { text: 'one' });
    const claim = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the turn offered');
    store.holding = true;
    const completed = runtime.completeTurn(claim.run_id, { claim_id: claim.claim_id, actions: [], text: 'done' });
    await eventually(() => store.held.length === 1, 5_000, "the turn's result handed to the store");
    store.releaseNext();
    await completed;
    const sleeps = (commit: Commit | undefined) => commit?.events.some((e) => e.type === 'transition_committed' && e.payload['to_phase'] === 'sleeping') ?? false;
    await eventually(() => sleeps(store.held[0]?.commit), 5_000, 'the sleep handed to the store');
    // The prompt is handed to the store while the sleep is not durable yet, built on it.
    const two = runtime.prompt('a', { text: 'two' });
    await eventually(() => store.held.length === 2, 5_000, 'the prompt handed to the store behind the sleep');
    expect(types(store.held[1]?.commit)).toEqual(['message_queued']);
    expect(store.held[1]?.commit.expected_version).toBe((store.held[0]?.commit.expected_version ?? -1) + 1);
    store.holding = false;
    store.releaseNext();
    store.releaseNext();
    await two;
    const next = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the woken turn offered');
    expect(next.messages.map((m) => textOf(m.body))).toEqual(['two']);
  });

  it('a message queued while a turn runs is claimed in the commit that finishes the turn: no commit of its own, no sleep between', async () => {
    const { runtime, store } = await heldAgent();
    await runtime.prompt('a', { text: 'one' });
    const first = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the turn offered');
    await runtime.prompt('a', { text: 'two' });
    store.holding = true;
    const completed = runtime.completeTurn(first.run_id, { claim_id: first.claim_id, actions: [], text: 'done' });
    await eventually(() => store.held.length === 1, 5_000, "the turn's result handed to the store");
    const finish = store.held[0]?.commit;
    // The finish, the next turn's decision and its start, in that order, in one commit.
    expect(types(finish).filter((t) => ['turn_finished', 'scheduler_decision', 'continuation_resolved', 'turn_started'].includes(t))).toEqual(['turn_finished', 'scheduler_decision', 'continuation_resolved', 'turn_started']);
    expect(finish?.events.some((e) => e.type === 'transition_committed' && e.payload['to_phase'] === 'sleeping')).toBe(false);
    store.holding = false;
    store.releaseNext();
    expect(await completed).toEqual({ run_id: first.run_id, applied: true });
    const next = await eventually(async () => (await runtime.claimTurn({ wait_ms: 0 })) ?? undefined, 5_000, 'the next turn offered');
    expect(next.messages.map((m) => textOf(m.body))).toEqual(['two']);
    expect(await eventsOfType(runtime, 'a', 'turn_started')).toHaveLength(2);
    const woken = (await eventsOfType(runtime, 'a', 'transition_committed')).filter((e) => e.payload['to_phase'] === 'waking');
    expect(woken).toHaveLength(1);
  });

  it("an operation that waits in the lane (durableBefore: 'start'), asked while a step waits to join, runs after the step", async () => {
    const { runtime, store } = await heldAgent();
    const { two, three } = await stepWaitingBehindTwo(runtime, store);
    const snapshot = runtime.takeSnapshot('a');
    await quiet();
    store.releaseNext();
    await two;
    const order: string[] = [];
    while (order.length < 10) {
      await eventually(() => store.held.length > 0, 5_000, 'the next commit');
      const commit = store.held[0]?.commit;
      order.push(wakes(commit) ? 'step' : types(commit).includes('snapshot_taken') ? 'snapshot' : types(commit).includes('turn_started') ? 'turn_started' : types(commit).join(','));
      store.releaseNext();
      if (order.includes('snapshot')) break;
    }
    await Promise.all([three, snapshot]);
    // The step (its wake and claim, and the turn's start if that is a commit of its own) ran
    // before the snapshot asked after it.
    expect(order.filter((o) => o !== 'turn_started')).toEqual(['message_queued', 'step', 'snapshot']);
  });
});
