import { Activity } from './lib/activity.js';
import { createAgents, openRuntime, scratchDir, type StoreKind } from './lib/fixtures.js';
import { threadCpuNs, until } from './lib/timing.js';

/**
 * What an accepted input costs as its agent's inbox fills: 20 agents whose turns are held (of
 * `turn_runner: http_worker`, woken by one prompt, their run offered to a worker that never
 * claims it), then one prompt to each at once, again and again, so every agent's queue grows by
 * one per step to 1,000 pending. Per band of 50 steps: µs of main-thread CPU per accepted prompt
 * (`/proc/thread-self/schedstat`, over the band's 1,000 accepts; it advances in scheduler ticks,
 * 4 ms on this kernel, so a band's figure moves in steps of 4 µs). An accept that counts its queue
 * costs more with every message pending; one that carries its counts stays flat.
 *
 *   npx tsx bench/inbox-depth.ts      (KIND: memory | lowdb, default memory)
 */
const KIND = (process.env['KIND'] ?? 'memory') as StoreKind;
const AGENTS = 20;
const DEPTH = 1000;
const BAND = 50;

const scratch = scratchDir('inbox-depth');
const runtime = await openRuntime(KIND, scratch.dir, { inboxMaxMessages: DEPTH + 10 });
const activity = new Activity(runtime);
try {
  const ids = await createAgents(runtime, AGENTS, 'depth-', AGENTS, { turn_runner: 'http_worker', model: 'scripted' });
  await until(() => activity.awakeCount === 0, 60_000, 'agents asleep', 20);
  await Promise.all(ids.map((id) => runtime.prompt(id, { text: 'wake' })));
  await until(() => activity.awakeCount === AGENTS, 60_000, 'agents awake, their runs offered', 20);
  const bands: string[] = [];
  for (let depth = 0; depth + BAND <= DEPTH; depth += BAND) {
    const started = threadCpuNs();
    for (let step = 0; step < BAND; step++) await Promise.all(ids.map((id) => runtime.prompt(id, { text: 'event' })));
    bands.push(`${depth}-${depth + BAND}: ${((threadCpuNs() - started) / 1e3 / (BAND * AGENTS)).toFixed(1)}`);
  }
  console.log(`${KIND}, ${AGENTS} agents; µs of main-thread CPU per accepted prompt, by messages already pending:`);
  for (let i = 0; i < bands.length; i += 5) console.log(`  ${bands.slice(i, i + 5).join('   ')}`);
} finally {
  activity.close();
  await runtime.close();
  scratch.remove();
}
