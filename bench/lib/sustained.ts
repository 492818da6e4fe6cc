import type { Activity } from './activity.js';
import { runLoad, type LoadResult } from './load.js';
import type { Metric } from './table.js';
import { delay } from './timing.js';

/**
 * Issue 18's sustained ingress measurement: `seconds` of load from `connections` connections,
 * then the drain, timed until the runtime's committed events show every accepted request
 * processed. Both sides are read from the event stream, never inferred from the responses: a
 * prompt is accepted when its `message_queued` commits and processed when its turn commits
 * (`turn_finished`, one message a turn today); a wake hint is accepted and recorded when its
 * `wake_hint` event commits, and processed once the turn it triggered (if any) is done (every
 * agent asleep). The server commits the requests still in flight when the load generator stops,
 * which it does not count: so the runtime's count is what the drain waits for.
 */

export type Processed = 'turns' | 'wake_hints';

export interface SustainedSpec {
  name: string;
  base: string;
  paths: string[];
  body: string;
  connections: number;
  seconds: number;
  /** `null` for a baseline whose requests leave nothing to drain. */
  processed: Processed | null;
  /** How long the drain is followed before it is reported as not finished. */
  drainTimeoutMs: number;
}

export interface SustainedResult {
  name: string;
  load: LoadResult;
  accepted: number;
  acceptedPerSecond: number;
  tooMany: number;
  /** Accepted as the runtime's committed events count them (includes the requests in flight when the load stopped). */
  committedAccepted: number;
  /** Processed during the load window and the drain together. */
  processed: number;
  /** `processed` over the load window plus the drain. */
  processedPerSecond: number;
  /** From the load's end until every accepted request is processed; `null` if it never was within the timeout. */
  drainMs: number | null;
  turns: number;
}

interface Counts {
  accepted: number;
  processed: number;
}

function counts(activity: Activity, processed: Processed): Counts {
  return processed === 'turns' ? { accepted: activity.promptsQueued, processed: activity.promptsProcessed } : { accepted: activity.wakeHints, processed: activity.wakeHints };
}

function since(activity: Activity, processed: Processed, before: Counts): Counts {
  const now = counts(activity, processed);
  return { accepted: now.accepted - before.accepted, processed: now.processed - before.processed };
}

function drained(activity: Activity, processed: Processed, before: Counts): boolean {
  const c = since(activity, processed, before);
  return c.processed >= c.accepted && activity.awakeCount === 0;
}

export async function measureSustained(activity: Activity, spec: SustainedSpec): Promise<SustainedResult> {
  const before = spec.processed ? counts(activity, spec.processed) : { accepted: 0, processed: 0 };
  const turnsBefore = activity.turnsFinished;
  const load = await runLoad({ base: spec.base, paths: spec.paths, body: spec.body, connections: spec.connections, durationSeconds: spec.seconds });
  const accepted = Object.entries(load.statusCounts).reduce((n, [code, c]) => (code.startsWith('2') ? n + c : n), 0);
  const tooMany = load.statusCounts['429'] ?? 0;
  let drainMs: number | null = 0;
  if (spec.processed) {
    const deadline = load.endedAt + spec.drainTimeoutMs;
    while (!drained(activity, spec.processed, before) && Date.now() < deadline) await delay(5);
    drainMs = drained(activity, spec.processed, before) ? Math.max(0, Date.now() - load.endedAt) : null;
  }
  const final = spec.processed ? since(activity, spec.processed, before) : { accepted: 0, processed: 0 };
  const window = spec.seconds + (drainMs ?? spec.drainTimeoutMs) / 1000;
  return {
    name: spec.name,
    load,
    accepted,
    acceptedPerSecond: accepted / spec.seconds,
    tooMany,
    committedAccepted: final.accepted,
    processed: final.processed,
    processedPerSecond: final.processed / window,
    drainMs,
    turns: activity.turnsFinished - turnsBefore,
  };
}

/** Issue 18's targets. */
export const TARGETS = { acceptedRatio: 0.4, p99Ms: 20, drainMs: 2000 } as const;

/** One table block per sustained measurement (one sample each: one run per invocation). */
export function sustainedMetrics(result: SustainedResult, baseline: SustainedResult): Metric[] {
  const ratio = result.acceptedPerSecond / baseline.acceptedPerSecond;
  const metrics: Metric[] = [
    { name: `sustained ${result.name}: accepted`, unit: 'req/s', samples: [result.acceptedPerSecond] },
    { name: '  ratio to hello-world (same run)', unit: '×', samples: [ratio], target: `≥ ${TARGETS.acceptedRatio}`, met: ratio >= TARGETS.acceptedRatio },
    { name: '  acceptance p50', unit: 'ms', samples: [result.load.latencyP50Ms] },
    { name: '  acceptance p99', unit: 'ms', samples: [result.load.latencyP99Ms], target: `≤ ${TARGETS.p99Ms}`, met: result.load.latencyP99Ms <= TARGETS.p99Ms },
    { name: '  processed (load + drain)', unit: '/s', samples: [result.processedPerSecond] },
    { name: '  429 responses', unit: 'count', samples: [result.tooMany] },
  ];
  if (result.drainMs !== null) metrics.push({ name: '  drain after load stops', unit: 'ms', samples: [result.drainMs], target: `≤ ${TARGETS.drainMs}`, met: result.drainMs <= TARGETS.drainMs });
  return metrics;
}

export function sustainedNote(result: SustainedResult, drainTimeoutMs: number): string {
  const codes = Object.entries(result.load.statusCounts).map(([code, n]) => `${code}: ${n}`).join(', ');
  const drain = result.drainMs === null ? `NOT drained within ${drainTimeoutMs / 1000} s of the load's end (drain target MISSED)` : `drained in ${result.drainMs} ms`;
  return `sustained ${result.name}: ${result.accepted} accepted by the client's count (${codes}; errors/timeouts ${result.load.errors}), ${result.committedAccepted} by the runtime's committed events, ${result.processed} processed, ${result.turns} turns committed; ${drain}`;
}
