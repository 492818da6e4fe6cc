import { createRequire } from 'node:module';
import type { LoadResult, LoadSpec } from './load.js';

/** The part of autocannon's API this process uses (the package ships no types). */
interface Histogram {
  p50: number;
  p99: number;
  total: number;
}
interface CannonClient {
  setRequests(requests: Array<{ method: string; path: string; headers: Record<string, string>; body: string }>): void;
}
interface CannonResult {
  requests: Histogram;
  latency: Histogram;
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  overallRate?: number;
  method: string;
  headers: Record<string, string>;
  body: string;
  setupClient: (client: CannonClient) => void;
}) => Promise<CannonResult>;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

async function main(spec: LoadSpec): Promise<LoadResult> {
  let connection = 0;
  const result = await autocannon({
    url: spec.base,
    connections: spec.connections,
    duration: spec.durationSeconds,
    ...(spec.ratePerSecond === undefined ? {} : { overallRate: spec.ratePerSecond }),
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: spec.body,
    setupClient: (client) => {
      const path = spec.paths[connection++ % spec.paths.length] as string;
      client.setRequests([{ method: 'POST', path, headers: { 'content-type': 'application/json' }, body: spec.body }]);
    },
  });
  const endedAt = Date.now();
  const statusCounts: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats)) statusCounts[code] = stat.count;
  return {
    endedAt,
    statusCounts,
    requestsPerSecond: result.requests.total / result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

process.once('message', (specs: LoadSpec[]) => {
  Promise.all(specs.map(main))
    .then((results) => process.send?.(results, () => process.exit(0)))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
});
