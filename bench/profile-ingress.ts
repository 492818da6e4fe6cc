import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { AgentEvent } from '../src/domain/index.js';
import { buildApp } from '../src/http/app.js';
import { Activity } from './lib/activity.js';
import { createAgents, openRuntime, scratchDir, type StoreKind } from './lib/fixtures.js';
import { runLoad } from './lib/load.js';
import { percentile } from './lib/stats.js';
import { pool, until } from './lib/timing.js';

/**
 * Profiles of the ingress paths, one window each (issue 18's "profile before you optimise"):
 *  - accept: 1,000 sleeping agents, one `runtime.prompt` each, all at once (after one unprofiled
 *    round of the same), until every prompt is answered (bench:events (a) in memory, (b) on
 *    lowdb); then, separately, the processing that follows (wake, turn, sleep) until every agent
 *    is asleep again;
 *  - wake: `WAKE_AGENTS` agents on lowdb, the runtime reopened (agents load lazily, as after a
 *    restart in bench:scale), `runtime.wake` on 500 of them (a fixed stride) with 10 in flight; per wake the
 *    arrival time of each committed event (delivered after it is durable) until `turn_started`.
 *  - http: the app over lowdb, `POST /api/control/agents/:id/prompt` from 100 connections for
 *    5 s (autocannon in a child process), to 100 agents and then to ONE agent; the server's side.
 * Writes `<out>/<window>.cpuprofile` (read them with `bench/lib/profile-top.ts`) and prints the
 * per-window figures.
 *
 *   npx tsx bench/profile-ingress.ts [out-dir]      (PROFILE_ONLY=http, wake or accept (memory): that window only)
 */

const AGENTS = 1000;
const WAKE_AGENTS = Number(process.env['WAKE_AGENTS'] ?? 5000);
const WAKES = 500;
const WAKE_CONCURRENCY = Number(process.env['WAKE_CONCURRENCY'] ?? 10);
const out = process.argv[2] ?? 'prof';
mkdirSync(out, { recursive: true });
const session = new Session();
session.connect();
await session.post('Profiler.enable');

async function profiled<T>(name: string, body: () => Promise<T>): Promise<T> {
  await session.post('Profiler.start');
  const result = await body();
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(join(out, `${name}.cpuprofile`), JSON.stringify(profile));
  return result;
}

async function acceptWindow(kind: StoreKind): Promise<void> {
  const scratch = scratchDir(`prof-${kind}`);
  const runtime = await openRuntime(kind, scratch.dir);
  const activity = new Activity(runtime);
  const ids = await createAgents(runtime, AGENTS, 'p');
  await until(() => activity.awakeCount === 0, 120_000, 'agents asleep', 20);
  // One unprofiled round first, so the profiled one runs warm code (as bench:events' later runs do).
  await Promise.all(ids.map((id) => runtime.prompt(id, { text: 'warm-up' })));
  await until(() => activity.awakeCount === 0 && activity.turnsFinished >= AGENTS, 120_000, 'warm-up turns', 2);
  const latencies: number[] = [];
  let started = 0;
  await profiled(`accept-${kind}`, () => Promise.all(ids.map(async (id, i) => {
    if (i === 0) started = performance.now(); // after Profiler.start, which takes a while itself
    const sent = performance.now();
    await runtime.prompt(id, { text: 'hi' });
    latencies.push(performance.now() - sent);
  })));
  const acceptedMs = performance.now() - started;
  const turnsBefore = activity.turnsFinished;
  await profiled(`process-${kind}`, () => until(() => activity.awakeCount === 0 && activity.turnsFinished - turnsBefore >= AGENTS, 120_000, 'turns', 2));
  const processedMs = performance.now() - started;
  console.log(`${kind}: ${AGENTS} prompts answered in ${acceptedMs.toFixed(0)} ms (${(AGENTS / acceptedMs * 1000).toFixed(0)}/s; answer p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms); all turns done and asleep at ${processedMs.toFixed(0)} ms`);
  activity.close();
  await runtime.close();
  scratch.remove();
}

const STAGES = ['answered', 'wake_hint', 'waking', 'awake_idle', 'decision', 'turn_started'] as const;
type Stage = (typeof STAGES)[number];

function stageOf(event: AgentEvent): Stage | null {
  const p = event.payload;
  if (event.type === 'wake_hint') return 'wake_hint';
  if (event.type === 'transition_committed' && p['to_phase'] === 'waking') return 'waking';
  if (event.type === 'transition_committed' && p['to_state'] === 'active.awakeIdle' && p['from_phase'] === 'waking') return 'awake_idle';
  if (event.type === 'scheduler_decision' && p['kind'] === 'start_model_turn') return 'decision';
  if (event.type === 'turn_started') return 'turn_started';
  return null;
}

async function wakeWindow(): Promise<void> {
  const scratch = scratchDir('prof-wake');
  let runtime = await openRuntime('lowdb', scratch.dir);
  let activity = new Activity(runtime);
  const ids = await createAgents(runtime, WAKE_AGENTS, 'w');
  await until(() => activity.awakeCount === 0, 300_000, 'agents asleep', 20);
  activity.close();
  await runtime.close();
  runtime = await openRuntime('lowdb', scratch.dir);
  activity = new Activity(runtime);
  const chosen = ids.filter((_, i) => (i * 7919) % WAKE_AGENTS < WAKES).slice(0, WAKES);
  const stamps = new Map<string, Partial<Record<Stage, number>> & { sent: number }>();
  const unsubscribe = runtime.subscribe(null, (event) => {
    const stage = stageOf(event);
    const entry = stamps.get(event.agent_id);
    if (stage && entry && entry[stage] === undefined) entry[stage] = performance.now() - entry.sent;
  });
  await profiled('wake-lowdb', () => pool(chosen, WAKE_CONCURRENCY, async (id) => {
    const entry: Partial<Record<Stage, number>> & { sent: number } = { sent: performance.now() };
    stamps.set(id, entry);
    await runtime.wake(id, { reason: 'profile' });
    entry.answered = performance.now() - entry.sent;
    await until(() => entry.turn_started !== undefined, 30_000, `${id} turn_started`, 1);
  }));
  unsubscribe();
  const rows = [...stamps.values()];
  console.log(`wake (lowdb, ${WAKE_AGENTS} agents reopened, ${chosen.length} wakes, ${WAKE_CONCURRENCY} in flight): ms after runtime.wake, p50 / p99`);
  for (const stage of STAGES) {
    const xs = rows.map((r) => r[stage]).filter((x): x is number => x !== undefined);
    if (xs.length) console.log(`  ${stage.padEnd(13)} ${percentile(xs, 50).toFixed(1).padStart(6)} / ${percentile(xs, 99).toFixed(1).padStart(6)}  (${xs.length})`);
  }
  await until(() => activity.awakeCount === 0, 60_000, 'woken agents asleep', 20);
  activity.close();
  await runtime.close();
  scratch.remove();
}

async function httpWindows(): Promise<void> {
  const scratch = scratchDir('prof-http');
  const runtime = await openRuntime('lowdb', scratch.dir);
  const activity = new Activity(runtime);
  const app = await buildApp({ runtime, auth: {} });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const ids = await createAgents(runtime, 100, 'h');
  await until(() => activity.awakeCount === 0, 120_000, 'agents asleep', 20);
  const windows = [['http-prompt-100', ids.map((id) => `/api/control/agents/${id}/prompt`)], ['http-prompt-one', ['/api/control/agents/h0/prompt']]] as const;
  // PROFILE_HTTP=100: the 100-agent window only (the ONE-agent window's drain takes minutes).
  for (const [name, paths] of windows.slice(0, process.env['PROFILE_HTTP'] === '100' ? 1 : 2)) {
    const turnsBefore = activity.turnsFinished;
    const promptsBefore = activity.promptsProcessed;
    const result = await profiled(name, () => runLoad({ base, paths: [...paths], body: '{"text":"hi"}', connections: 100, durationSeconds: 5 }));
    const turnsDuring = activity.turnsFinished - turnsBefore;
    const stopped = performance.now();
    await until(() => activity.awakeCount === 0 && activity.promptsProcessed - promptsBefore >= result.requests - result.non2xx, 300_000, 'agents asleep', 20);
    console.log(`${name}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.latencyP50Ms} ms, p99 ${result.latencyP99Ms} ms, non-2xx ${result.non2xx}; ${turnsDuring} turns (for ${result.requests - result.non2xx} accepted prompts) finished during the load, the rest in ${(performance.now() - stopped).toFixed(0)} ms after it`);
  }
  await app.close();
  activity.close();
  await runtime.close();
  scratch.remove();
}

const only = process.env['PROFILE_ONLY'];
if (only === 'http' || only === 'wake' || only === 'accept') {
  await (only === 'http' ? httpWindows() : only === 'wake' ? wakeWindow() : acceptWindow('memory'));
  session.disconnect();
  process.exit(0);
}
await acceptWindow('memory');
await acceptWindow('lowdb');
await wakeWindow();
await httpWindows();
session.disconnect();
process.exit(0);
