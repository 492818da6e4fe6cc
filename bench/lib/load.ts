import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One load test: every connection posts `body` to its own path, `paths[connection % paths.length]`. */
export interface LoadSpec {
  base: string;
  paths: string[];
  body: string;
  connections: number;
  durationSeconds: number;
  /** Open loop: at most this many requests a second over all its connections (autocannon's `overallRate`). Default: closed loop, each connection sends its next request once answered. */
  ratePerSecond?: number;
}

export interface LoadResult {
  /** `Date.now()` in the load generator when its last request was answered (or given up). */
  endedAt: number;
  /** Responses by HTTP status code. */
  statusCounts: Record<string, number>;
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

/**
 * Runs autocannon in a child process, so the load generator has its own event loop and does not
 * steal the server's (the server under test runs in this process). Not a worker thread:
 * autocannon inside a worker thread reports encoded histograms meant for its own parent.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const [result] = await runLoads([spec]);
  return result as LoadResult;
}

/**
 * Several loads at once from ONE load-generator process (one result per spec, in order), so a
 * load split over several servers costs the client what one load to one server costs: the same
 * process, the same connections, all started together. Their durations should be equal.
 */
export function runLoads(specs: LoadSpec[]): Promise<LoadResult[]> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./load-worker.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let results: LoadResult[] | null = null;
    child.once('message', (message) => {
      results = message as LoadResult[];
    });
    child.once('error', reject);
    // 'close', not 'exit': 'exit' may come before the IPC channel delivered the child's last
    // message (a run of `npm run bench` lost its results so once); 'close' follows the channel's end.
    child.once('close', (code) => {
      if (code === 0 && results) resolve(results);
      else reject(new Error(`load generator exited with ${code}`));
    });
    child.send(specs);
  });
}
