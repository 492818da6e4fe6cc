import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { buildApp } from '../src/http/app.js';
import { Activity } from './lib/activity.js';
import { openRuntime, scratchDir, type StoreKind } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { median, pairwiseRatios } from './lib/stats.js';
import { measureSustained, sustainedMetrics, sustainedNote, type SustainedResult, type SustainedSpec } from './lib/sustained.js';
import type { Metric } from './lib/table.js';
import { pool, until } from './lib/timing.js';

/**
 * `POST /callbacks/wake/:token` and `POST /api/control/agents/:id/prompt` under autocannon
 * (100 connections, loopback), against a Fastify hello-world `POST /hello` served by the same
 * process, measured in the same run. The app runs over the durable lowdb runtime (the default
 * deployment); each connection drives its own agent, so the 100 agents' lanes run in parallel.
 * The load generator runs in a worker thread; between measurements the runtime is let finish the
 * turns the requests queued, so one measurement's backlog does not slow the next.
 *
 * Then issue 18's sustained measurement, once per invocation: `--seconds` (default 10) of load
 * from 100 connections to the hello-world, then to each endpoint spread over the 100 agents and
 * aimed at ONE agent, each followed by its drain (see `lib/sustained.ts`).
 */

const RUNS = 5;
const CONNECTIONS = 100;
const DURATION_S = 2;
const STORE: StoreKind = 'lowdb';
const SETTLE_TIMEOUT_MS = 120_000;
const DRAIN_TIMEOUT_MS = 60_000;
const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const SUSTAINED_S = Number(args.seconds);
if (!Number.isInteger(SUSTAINED_S) || SUSTAINED_S < 1) throw new Error(`--seconds wants a whole number of seconds ≥ 1, got ${args.seconds}`);

interface Target {
  name: string;
  base: string;
  paths: string[];
  body: string;
}

runBenchmark('http', 15 * 60_000, async () => {
  const scratch = scratchDir('http');
  const runtime = await openRuntime(STORE, scratch.dir);
  const activity = new Activity(runtime);
  const app = await buildApp({ runtime, auth: {} });
  const hello = Fastify({ logger: false });
  hello.post('/hello', async () => ({ hello: 'world' }));
  const results = new Map<string, LoadResult[]>();
  try {
    const appBase = await app.listen({ port: 0, host: '127.0.0.1' });
    const helloBase = await hello.listen({ port: 0, host: '127.0.0.1' });
    const ids = Array.from({ length: CONNECTIONS }, (_, i) => `http-${i}`);
    const oneId = 'http-one';
    const tokens = new Map<string, string>();
    await pool([...ids, oneId], 16, async (id) => {
      const created = await runtime.createAgent({ agent_id: id, mission: 'http benchmark' });
      tokens.set(id, created.external_trigger.token);
    });
    const settle = () => until(() => activity.awakeCount === 0, SETTLE_TIMEOUT_MS, 'agents to finish their turns and sleep', 20);
    await settle();
    const targets: Target[] = [
      { name: 'baseline: Fastify hello-world POST /hello', base: helloBase, paths: ['/hello'], body: '{"text":"hi"}' },
      { name: 'POST /callbacks/wake/:token', base: appBase, paths: ids.map((id) => `/callbacks/wake/${tokens.get(id) as string}`), body: '{"text":"hi"}' },
      { name: 'POST /api/control/agents/:id/prompt', base: appBase, paths: ids.map((id) => `/api/control/agents/${id}/prompt`), body: '{"text":"hi"}' },
    ];
    const load = (target: Target) => runLoad({ base: target.base, paths: target.paths, body: target.body, connections: CONNECTIONS, durationSeconds: DURATION_S });
    for (let run = 0; run < RUNS; run++) {
      for (const target of targets) {
        const result = await load(target);
        results.set(target.name, [...(results.get(target.name) ?? []), result]);
        if (result.non2xx > 0 || result.errors > 0) progress(`${target.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        await settle();
      }
      progress(`run ${run + 1}/${RUNS}: ${targets.map((t) => `${results.get(t.name)?.at(-1)?.requestsPerSecond.toFixed(0)} req/s`).join(', ')}`);
    }
    const wakePaths = targets[1]?.paths ?? [];
    const promptPaths = targets[2]?.paths ?? [];
    const sustainedSpecs: SustainedSpec[] = (
      [
        ['baseline: Fastify hello-world', helloBase, ['/hello'], null],
        ['wake, 100 agents', appBase, wakePaths, 'wake_hints'],
        ['wake, ONE agent', appBase, [`/callbacks/wake/${tokens.get(oneId) as string}`], 'wake_hints'],
        ['prompt, 100 agents', appBase, promptPaths, 'turns'],
        ['prompt, ONE agent', appBase, [`/api/control/agents/${oneId}/prompt`], 'turns'],
      ] as const
    ).map(([name, base, paths, processed]) => ({ name, base, paths: [...paths], body: '{"text":"hi"}', processed, connections: CONNECTIONS, seconds: SUSTAINED_S, drainTimeoutMs: DRAIN_TIMEOUT_MS }));
    const sustained: SustainedResult[] = [];
    for (const spec of sustainedSpecs) {
      const result = await measureSustained(activity, spec);
      sustained.push(result);
      progress(sustainedNote(result, DRAIN_TIMEOUT_MS));
      await settle();
    }
    const base = (results.get(targets[0]?.name as string) ?? []).map((r) => r.requestsPerSecond);
    const metrics: Metric[] = [];
    for (const target of targets) {
      const rs = results.get(target.name) ?? [];
      metrics.push({ name: `${target.name}`, unit: 'req/s', samples: rs.map((r) => r.requestsPerSecond) });
      metrics.push({ name: `  p99 latency`, unit: 'ms', samples: rs.map((r) => r.latencyP99Ms) });
      if (target !== targets[0]) {
        const ratio = pairwiseRatios(rs.map((r) => r.requestsPerSecond), base);
        metrics.push({ name: `  ratio to hello-world`, unit: '×', samples: ratio, target: '≥ 0.4', met: median(ratio) >= 0.4 });
      }
    }
    const [helloSustained, ...endpoints] = sustained as [SustainedResult, ...SustainedResult[]];
    metrics.push({ name: `sustained baseline: Fastify hello-world`, unit: 'req/s', samples: [helloSustained.acceptedPerSecond] });
    for (const result of endpoints) metrics.push(...sustainedMetrics(result, helloSustained));
    const failures = [...results.values()].flat().reduce((n, r) => n + r.non2xx + r.errors, 0);
    return {
      metrics,
      notes: [
        `${CONNECTIONS} connections × ${DURATION_S} s per measurement, autocannon in a child process, loopback; app over the ${STORE} runtime, ${CONNECTIONS} agents (one per connection)`,
        `non-2xx responses and errors over all measurements: ${failures}`,
        `sustained: ${CONNECTIONS} connections × ${SUSTAINED_S} s each (--seconds), one run; drain followed up to ${DRAIN_TIMEOUT_MS / 1000} s; acceptance latency is autocannon's, over every response; hello-world p50/p99 ${helloSustained.load.latencyP50Ms}/${helloSustained.load.latencyP99Ms} ms`,
        ...endpoints.map((r) => sustainedNote(r, DRAIN_TIMEOUT_MS)),
      ],
    };
  } finally {
    await app.close().catch(() => undefined);
    await hello.close().catch(() => undefined);
    activity.close();
    await runtime.close().catch(() => undefined);
    scratch.remove();
  }
});
