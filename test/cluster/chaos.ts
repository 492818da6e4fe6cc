import { call } from '../http/helpers.js';
import type { Acknowledged } from './checker.js';
import type { ClusterNode } from './harness.js';

/**
 * Issue 19 acceptance #1's load and chaos: `agents` agents created through random nodes, then for
 * `durationMs` a mixed load through random nodes (prompts, some running a command task or setting
 * a timer, wake hints, timers) while a chaos loop SIGKILLs a random node (started again a moment
 * later) or SIGSTOPs one past its lease (then SIGCONT). Only 2xx answers are acknowledged; a
 * refused or failed request is retried through another node later, as a client would. Every node
 * runs again at the end. Deterministic given `seed` (the order of operations, not the timing).
 */
export interface ChaosOptions {
  nodes: ClusterNode[];
  agents: number;
  durationMs: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** The nodes' lease TTL: a pause lasts longer than it. */
  leaseTtlMs: number;
  /** Between two chaos events. */
  chaosEveryMs: number;
  seed: number;
  /** The share of chaos events that are kills (the rest are pauses); default one half. */
  killShare?: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  acknowledged: Acknowledged[];
  counts: Record<string, number>;
  kills: number;
  pauses: number;
  refused: number;
}

/** A small deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const random = prng(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const { nodes } = options;
  const acknowledged: Acknowledged[] = [];
  const counts: Record<string, number> = {};
  let refused = 0;
  const count = (what: string): void => {
    counts[what] = (counts[what] ?? 0) + 1;
  };
  /** One request through a node; `null` when refused or unanswered. */
  const send = async <T>(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T } | null> => {
    const node = pick(nodes);
    try {
      const reply = await call<T>(node.url, method, path, { ...(json === undefined ? {} : { json }), headers });
      if (reply.status >= 200 && reply.status < 300) return reply;
      refused += 1;
      count(`refused ${reply.status}`);
      return null;
    } catch {
      refused += 1;
      count('unanswered');
      return null;
    }
  };

  // The agents, each created with an Idempotency-Key retried until acknowledged.
  const ids = Array.from({ length: options.agents }, (_, i) => `chaos-${i}`);
  const createOne = async (agentId: string): Promise<void> => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const reply = await send('POST', '/api/control/agents', { agent_id: agentId }, { 'Idempotency-Key': `create-${agentId}` });
      if (reply) {
        acknowledged.push({ agent_id: agentId, kind: 'agent' });
        count('agent created');
        return;
      }
      await sleep(200);
    }
    throw new Error(`agent ${agentId} was never created`);
  };
  for (let i = 0; i < ids.length; i += options.concurrency) await Promise.all(ids.slice(i, i + options.concurrency).map(createOne));
  options.log?.(`chaos: ${ids.length} agents created`);

  let stop = false;
  let kills = 0;
  let pauses = 0;
  const chaos = (async () => {
    while (!stop) {
      await sleep(options.chaosEveryMs);
      if (stop) break;
      const node = pick(nodes);
      if (random() < (options.killShare ?? 0.5)) {
        kills += 1;
        options.log?.(`chaos: SIGKILL ${node.nodeId}`);
        await node.kill();
        await sleep(500);
        node.start();
        await node.listening().catch(() => undefined);
      } else {
        pauses += 1;
        options.log?.(`chaos: SIGSTOP ${node.nodeId} for ${options.leaseTtlMs + 1_000} ms`);
        node.pause();
        await sleep(options.leaseTtlMs + 1_000);
        node.resume();
      }
    }
  })();

  let n = 0;
  const operation = async (): Promise<void> => {
    const agentId = pick(ids);
    const roll = random();
    n += 1;
    if (roll < 0.45) {
      const text = roll < 0.1 ? `/exec echo chaos ${n}` : roll < 0.15 ? '/timer 300' : `hello ${n}`;
      const reply = await send<{ message_id: string }>('POST', `/api/control/agents/${agentId}/prompt`, { text }, { 'Idempotency-Key': `prompt-${n}` });
      if (reply) {
        acknowledged.push({ agent_id: agentId, kind: 'message', message_id: reply.body.message_id });
        count('prompt');
      }
    } else if (roll < 0.65) {
      if (await send('POST', `/api/control/agents/${agentId}/wake`, { reason: `wake ${n}` })) count('wake');
    } else if (roll < 0.75) {
      if (await send('POST', `/api/control/agents/${agentId}/timers`, { duration_ms: 200 + Math.floor(random() * 800) })) count('timer');
    } else if (roll < 0.8) {
      if (await send('POST', `/api/control/agents/${agentId}/tasks`, { cmd: 'echo task', summary: 'chaos task' })) count('command task');
    } else {
      if (await send('GET', `/api/agents/${agentId}/status`)) count('status');
    }
  };
  const deadline = Date.now() + options.durationMs;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (Date.now() < deadline) await operation();
    }),
  );
  stop = true;
  await chaos;
  // Every node runs again (a pause is over: the chaos loop resumed it).
  for (const node of nodes) {
    const child = node.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) node.start();
    await node.listening();
  }
  options.log?.(`chaos: ${n} operations, ${kills} kills, ${pauses} pauses, ${refused} refused or unanswered; ${JSON.stringify(counts)}`);
  return { acknowledged, counts, kills, pauses, refused };
}
