import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Activity } from './lib/activity.js';
import { createAgents, openRuntime, scratchDir } from './lib/fixtures.js';
import { median, percentile } from './lib/stats.js';
import { threadCpuNs, until } from './lib/timing.js';

/**
 * bench:events (a)'s accept, measured alone: 1,000 sleeping agents, one `runtime.prompt` to each
 * at once (`Promise.all`), per round the µs per accepted prompt of wall time and of the main
 * thread's CPU time (`/proc/thread-self/schedstat`: the time other tenants held the core is left
 * out; it advances in scheduler ticks, 4 ms here, which is 4 µs per accept in one round, so the
 * CPU per accept over all rounds together is printed too). Each round first waits for the previous
 * round's turns, so its window holds the accepts only. For A/B runs of a change to the accept
 * path (interleave them: the machine drifts).
 *
 *   npx tsx bench/accept-probe.ts
 *
 * ROUNDS (default 20, after 3 warm-up rounds), KIND (memory | lowdb, default memory), PROFILE=1:
 * a CPU profile of each measured round's window in bench/results/accept-<round>.cpuprofile.
 */
const AGENTS = 1000;
const WARM_UP = 3;
const ROUNDS = Number(process.env['ROUNDS'] ?? 20);
const PROFILE = process.env['PROFILE'] === '1';
const KIND = (process.env['KIND'] ?? 'memory') as 'memory' | 'lowdb';

/** Nanoseconds this thread has run on a CPU (Linux). */
const scratch = scratchDir('accept-probe');
const runtime = await openRuntime(KIND, scratch.dir);
const activity = new Activity(runtime);
const session = new Session();
session.connect();
try {
  const ids = await createAgents(runtime, AGENTS, 'p');
  await until(() => activity.awakeCount === 0, 120_000, 'agents asleep', 20);
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let round = 0; round < WARM_UP + ROUNDS; round++) {
    const measured = round >= WARM_UP;
    const before = activity.promptsProcessed;
    if (PROFILE && measured) await session.post('Profiler.start');
    const cpuStart = threadCpuNs();
    const started = performance.now();
    await Promise.all(ids.map((id) => runtime.prompt(id, { text: 'event' })));
    const ms = performance.now() - started;
    const cpuMs = (threadCpuNs() - cpuStart) / 1e6;
    if (PROFILE && measured) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(`bench/results/accept-${round}.cpuprofile`, JSON.stringify(profile));
    }
    if (measured) {
      wall.push((ms * 1000) / AGENTS);
      cpu.push((cpuMs * 1000) / AGENTS);
    }
    await until(() => activity.promptsProcessed - before >= AGENTS && activity.awakeCount === 0, 120_000, 'turns to finish', 2);
  }
  const line = (name: string, samples: number[]) =>
    `${name}: median ${median(samples).toFixed(1)}, p25 ${percentile(samples, 25).toFixed(1)}, p75 ${percentile(samples, 75).toFixed(1)} µs`;
  console.log(`${KIND}, ${AGENTS} prompts per round, ${ROUNDS} rounds; per accepted prompt:`);
  console.log(`  ${line('main-thread CPU', cpu)}; all rounds ${(cpu.reduce((a, b) => a + b, 0) / cpu.length).toFixed(2)} µs`);
  console.log(`  ${line('wall time', wall)}`);
} finally {
  session.disconnect();
  activity.close();
  await runtime.close();
  scratch.remove();
}
