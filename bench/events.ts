import { createActor, type Actor } from 'xstate';
import { agentMachine } from '../machines/index.js';
import { emptyFacts } from '../src/domain/index.js';
import type { Runtime } from '../src/runtime/runtime.js';
import { Activity } from './lib/activity.js';
import { createAgents, openRuntime, scratchDir, type StoreKind } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { pairwiseRatios, median } from './lib/stats.js';
import { until } from './lib/timing.js';

/**
 * Events accepted by 1,000 agents through the runtime API (`prompt`), in memory and durable,
 * against raw XState `actor.send` on the same agent machine, measured in the same run.
 *
 * One runtime event is one `runtime.prompt`. It is accepted once its commit is durable (after
 * the fdatasync of its group commit on lowdb); that is when the caller is answered. The target is
 * checked on this accepted rate, as the issue words it ("events accepted by agents", "(b)
 * acknowledged after fsync"). Each accepted prompt then wakes its sleeping agent, runs a scripted
 * turn and puts the agent back to sleep: six commits, an actor rehydrated and stopped. The rate
 * until all of that is done (`processed`) is reported too, without a target: it measures the
 * whole lifecycle an event causes, not the event's acceptance.
 *
 * Each run prompts the next slice of the 1,000 resident agents (all at once, one prompt each),
 * so every run starts from the same state. The baseline sends TURN.START / TURN.FINISHED pairs,
 * the two machine events one prompt's turn needs, to 1,000 started actors; each `send` counts as
 * one event.
 */

const AGENTS = 1000;
const RUNS = 5;
/** lowdb runs with nothing in between (see below), reported without a target. */
const SUSTAINED_RUNS = 6;
const BASELINE_ROUNDS = 50;
/** Agents prompted per run (one prompt each), a rotating slice of the resident agents. */
const PROMPTED_PER_RUN: Record<StoreKind, number> = { memory: 1000, lowdb: 1000 };
const RUN_TIMEOUT_MS = 60_000;

type AgentActor = Actor<typeof agentMachine>;

function baselineActors(): AgentActor[] {
  const actors = Array.from({ length: AGENTS }, (_, i) => createActor(agentMachine, { input: { agentId: `raw${i}` } }).start());
  for (const actor of actors) {
    actor.send({ type: 'INITIALIZE' });
    actor.send({ type: 'INITIALIZE.DONE' });
  }
  return actors;
}

let baselineRound = 0;

/** events/s of raw `actor.send`, cycling awakeIdle → awakeRunning → awakeIdle. */
function baselineRun(actors: AgentActor[]): number {
  const queued = { ...emptyFacts(), queue: { queued: 1, interrupted: 0 } };
  const settled = emptyFacts('awake_running');
  const started = performance.now();
  for (let round = 0; round < BASELINE_ROUNDS; round++) {
    const runId = `run${baselineRound++}`;
    for (const actor of actors) {
      actor.send({ type: 'TURN.START', runId, facts: queued });
      actor.send({ type: 'TURN.FINISHED', runId, facts: settled });
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const value = JSON.stringify(actors[AGENTS - 1]?.getSnapshot().value);
  if (value !== JSON.stringify({ active: 'awakeIdle' })) throw new Error(`baseline actors ended in ${value}`);
  return (2 * BASELINE_ROUNDS * AGENTS) / seconds;
}

interface RuntimeRates {
  acknowledged: number;
  processed: number;
}

async function runtimeRun(runtime: Runtime, activity: Activity, ids: string[]): Promise<RuntimeRates> {
  const total = ids.length;
  const promptsBefore = activity.promptsProcessed;
  const started = performance.now();
  await Promise.all(ids.map((id) => runtime.prompt(id, { text: 'event' })));
  const acknowledged = performance.now() - started;
  await until(() => activity.promptsProcessed - promptsBefore >= total && activity.awakeCount === 0, RUN_TIMEOUT_MS, 'turns to finish');
  const processed = performance.now() - started;
  return { acknowledged: total / (acknowledged / 1000), processed: total / (processed / 1000) };
}

async function settle(activity: Activity): Promise<void> {
  await until(() => activity.awakeCount === 0, RUN_TIMEOUT_MS, 'agents to fall asleep');
}

runBenchmark('events', 8 * 60_000, async () => {
  const actors = baselineActors();
  const baseline: number[] = [];
  const sustained: number[] = [];
  const rates: Record<StoreKind, { acknowledged: number[]; processed: number[] }> = {
    memory: { acknowledged: [], processed: [] },
    lowdb: { acknowledged: [], processed: [] },
  };
  const scratch = scratchDir('events');
  const runtimes = {} as Record<StoreKind, { runtime: Runtime; activity: Activity; ids: string[] }>;
  try {
    for (const kind of ['memory', 'lowdb'] as const) {
      const runtime = await openRuntime(kind, scratch.dir);
      const activity = new Activity(runtime);
      const started = performance.now();
      const ids = await createAgents(runtime, AGENTS, `${kind}-`);
      await settle(activity);
      progress(`${kind}: ${AGENTS} agents created and asleep in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      runtimes[kind] = { runtime, activity, ids };
    }
    baselineRun(actors); // warm-up
    for (let run = 0; run < RUNS; run++) {
      baseline.push(baselineRun(actors));
      for (const kind of ['memory', 'lowdb'] as const) {
        const { runtime, activity, ids } = runtimes[kind];
        const count = PROMPTED_PER_RUN[kind];
        const slice = Array.from({ length: count }, (_, i) => ids[(run * count + i) % ids.length] as string);
        const r = await runtimeRun(runtime, activity, slice);
        rates[kind].acknowledged.push(r.acknowledged);
        rates[kind].processed.push(r.processed);
        await settle(activity);
      }
      progress(`run ${run + 1}/${RUNS}: baseline ${baseline.at(-1)?.toFixed(0)} ev/s, accepted memory ${rates.memory.acknowledged.at(-1)?.toFixed(0)}, lowdb ${rates.lowdb.acknowledged.at(-1)?.toFixed(0)} ev/s`);
    }
    // The runs above give each lowdb run the time the baseline and memory runs take, in which the
    // checkpoint round its commits started finishes. Back to back, the next prompts meet that
    // round's file writes and syncfs on the same disk as the log's fdatasync.
    const { runtime, activity, ids } = runtimes.lowdb;
    for (let run = 0; run < SUSTAINED_RUNS; run++) {
      const slice = Array.from({ length: ids.length }, (_, i) => ids[(run * 7 + i) % ids.length] as string);
      sustained.push((await runtimeRun(runtime, activity, slice)).acknowledged);
      await settle(activity);
    }
    progress(`lowdb back to back: accepted ${sustained.map((r) => r.toFixed(0)).join(', ')} ev/s`);
  } finally {
    for (const { runtime, activity } of Object.values(runtimes)) {
      activity.close();
      await runtime.close();
    }
    for (const actor of actors) actor.stop();
    scratch.remove();
  }
  const memoryRatio = pairwiseRatios(rates.memory.acknowledged, baseline);
  const lowdbRatio = pairwiseRatios(rates.lowdb.acknowledged, baseline);
  return {
    metrics: [
      { name: 'baseline: raw XState actor.send, 1,000 actors', unit: 'events/s', samples: baseline },
      { name: '(a) memory: prompt accepted (committed, answered)', unit: 'events/s', samples: rates.memory.acknowledged },
      { name: '(b) lowdb: prompt accepted (fdatasync, answered)', unit: 'events/s', samples: rates.lowdb.acknowledged },
      { name: '(a) ratio memory accepted / baseline', unit: '×', samples: memoryRatio, target: '≥ 0.5', met: median(memoryRatio) >= 0.5 },
      { name: '(b) ratio durable accepted / baseline', unit: '×', samples: lowdbRatio, target: '≥ 0.25', met: median(lowdbRatio) >= 0.25 },
      { name: '(b) lowdb, runs back to back: prompt accepted', unit: 'events/s', samples: sustained },
      { name: '(a) memory: processed (wake, turn, sleep done)', unit: 'events/s', samples: rates.memory.processed },
      { name: '(b) lowdb: processed (wake, turn, sleep done)', unit: 'events/s', samples: rates.lowdb.processed },
      { name: '(a) ratio memory processed / baseline', unit: '×', samples: pairwiseRatios(rates.memory.processed, baseline) },
      { name: '(b) ratio durable processed / baseline', unit: '×', samples: pairwiseRatios(rates.lowdb.processed, baseline) },
    ],
    notes: [
      `${AGENTS} resident agents per store, asleep; per run one prompt to each of ${PROMPTED_PER_RUN.memory} (memory) / ${PROMPTED_PER_RUN.lowdb} (lowdb) of them, all issued at once`,
      `baseline: ${BASELINE_ROUNDS} rounds × ${AGENTS} actors × (TURN.START + TURN.FINISHED) per run`,
      `back to back: ${SUSTAINED_RUNS} lowdb runs after the others, each started as soon as the previous one's agents slept (the checkpoint round it started may still be writing)`,
      'target checked on the accepted rate; processed = until every prompted agent ran its turn and slept again (at least WAKE, WAKE.DONE, TURN.START, TURN.FINISHED, IDLE and six commits per prompt), reported without a target',
    ],
  };
});
