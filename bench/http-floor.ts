import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import Fastify from 'fastify';
import { buildApp } from '../src/http/app.js';
import { Activity } from './lib/activity.js';
import { createAgents, openRuntime, scratchDir } from './lib/fixtures.js';
import { runLoad } from './lib/load.js';
import { pool, until } from './lib/timing.js';

/**
 * What bench:http's ratio would be if the runtime cost nothing: the app's HTTP layer (its hooks,
 * plugins, validation and error envelope) on requests that reach no agent, beside a prompt and
 * against the Fastify hello-world `POST /hello` that bench:http divides by, all in one run
 * (100 connections, autocannon in a child process, the app over lowdb with 100 sleeping agents).
 *
 *   npx tsx bench/http-floor.ts      (FLOOR_SECONDS per load, default 3)
 *
 * FLOOR_PROFILE=<text>: a CPU profile of the server's main thread (200 µs sampling) during each
 * row whose name contains the text, in bench/results/floor-<row>.cpuprofile.
 *
 * Rows, in order (hello-world first and last; ratios are to the mean of the two):
 *  - the app's no-op route: `POST /floor` answering `{"hello":"world"}` with no schema, registered
 *    on the app for this measurement only: every hook and plugin of the app, no validation;
 *  - a prompt with an invalid body: validated, refused with 400 and the ErrorEnvelope;
 *  - a wake through an unknown capability URL: hashed, looked up, refused with 403;
 *  - a prompt to one of 100 agents: accepted (durable), and the turn it joins;
 *  - a prompt to one of 100 agents whose turns are held: agents of `turn_runner: http_worker` that
 *    no worker claims, so after each agent's first prompt (its wake and its run's offer) every
 *    prompt is accepted (durable) and queued, and no turn runs. What bench:http's prompt row could
 *    reach if the turns cost this thread nothing (on a second core, say); inbox bounds raised so
 *    no prompt is refused.
 */
const SECONDS = Number(process.env['FLOOR_SECONDS'] ?? 3);
const CONNECTIONS = 100;
const PROFILE = process.env['FLOOR_PROFILE'];

const scratch = scratchDir('http-floor');
const runtime = await openRuntime('lowdb', scratch.dir, { inboxMaxMessages: 1_000_000, inboxMaxBytes: 1 << 30 });
const activity = new Activity(runtime);
const app = await buildApp({ runtime, auth: {} });
app.post('/floor', async () => ({ hello: 'world' }));
const hello = Fastify({ logger: false });
hello.post('/hello', async () => ({ hello: 'world' }));
const session = new Session();
session.connect();
try {
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  const appBase = await app.listen({ port: 0, host: '127.0.0.1' });
  const helloBase = await hello.listen({ port: 0, host: '127.0.0.1' });
  const ids = await createAgents(runtime, CONNECTIONS, 'floor-');
  await until(() => activity.awakeCount === 0, 120_000, 'agents asleep', 20);
  const prompts = ids.map((id) => `/api/control/agents/${id}/prompt`);
  const held = await createAgents(runtime, CONNECTIONS, 'held-', 64, { turn_runner: 'http_worker', model: 'scripted' });
  await until(() => activity.awakeCount === 0, 120_000, 'agents asleep', 20);
  // Each held agent's first prompt wakes it and offers its run to workers, outside the load.
  await pool(held, 64, async (agent_id) => {
    await runtime.prompt(agent_id, { text: 'wake' });
  });
  await until(() => activity.awakeCount === held.length, 120_000, 'held agents awake', 20);
  const rows: Array<{ name: string; base: string; paths: string[]; body: string }> = [
    { name: 'Fastify hello-world', base: helloBase, paths: ['/hello'], body: '{"text":"hi"}' },
    { name: 'app: no-op route', base: appBase, paths: ['/floor'], body: '{"text":"hi"}' },
    { name: 'app: prompt, invalid body (400)', base: appBase, paths: prompts, body: '{"txt":1}' },
    { name: 'app: wake, unknown capability (403)', base: appBase, paths: ids.map((_, i) => `/callbacks/wake/unknown-${i}`), body: '{"text":"hi"}' },
    { name: 'app: prompt, 100 agents (200)', base: appBase, paths: prompts, body: '{"text":"hi"}' },
    { name: 'app: prompt, 100 held agents (200)', base: appBase, paths: held.map((id) => `/api/control/agents/${id}/prompt`), body: '{"text":"hi"}' },
    { name: 'Fastify hello-world', base: helloBase, paths: ['/hello'], body: '{"text":"hi"}' },
  ];
  const measured: Array<{ name: string; rate: number; p50: number; p99: number; statuses: Record<string, number> }> = [];
  for (const [index, row] of rows.entries()) {
    const profiled = PROFILE !== undefined && row.name.includes(PROFILE);
    if (profiled) await session.post('Profiler.start');
    const result = await runLoad({ base: row.base, paths: row.paths, body: row.body, connections: CONNECTIONS, durationSeconds: SECONDS });
    if (profiled) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(`bench/results/floor-${index}.cpuprofile`, JSON.stringify(profile));
    }
    measured.push({ name: row.name, rate: result.requestsPerSecond, p50: result.latencyP50Ms, p99: result.latencyP99Ms, statuses: result.statusCounts });
    await until(() => activity.awakeCount === held.length, 120_000, 'agents asleep but the held ones', 20);
  }
  const first = measured[0]?.rate ?? 0;
  const last = measured.at(-1)?.rate ?? 0;
  const helloRate = (first + last) / 2;
  console.log(`http floor: ${CONNECTIONS} connections × ${SECONDS} s per row; ratio to the mean of the two hello-world rows (${first.toFixed(0)}, ${last.toFixed(0)} req/s)`);
  for (const row of measured) {
    console.log(`  ${row.name.padEnd(38)} ${row.rate.toFixed(0).padStart(7)} req/s  ${(row.rate / helloRate).toFixed(3)}×  p50 ${row.p50} / p99 ${row.p99} ms  ${JSON.stringify(row.statuses)}`);
  }
} finally {
  session.disconnect();
  await app.close();
  await hello.close();
  activity.close();
  await runtime.close();
  scratch.remove();
}
