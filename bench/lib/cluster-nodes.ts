import { call } from '../../test/http/helpers.js';
import { startNodes, type ClusterNode } from '../../test/cluster/harness.js';
import { runLoads, type LoadResult } from './load.js';
import { progress } from './harness.js';

/**
 * bench:cluster's node figures (issue 19), on real `serve` processes: durable prompt and wake
 * throughput through three nodes on one database against one node on another database of the same
 * server (the same agents per node, the same connections in all; each figure the mean of two loads,
 * interleaved one, three, three, one, after an unmeasured warm-up of each: 3 s for one node, 9 s for
 * three), each request sent to the node
 * that holds its agent, and again with every request sent to a node that does not (all forwarded);
 * and the failover time: a busy agent's owner is SIGKILLed, and a prompt is retried through another
 * node until it is answered.
 */
export interface NodeFigures {
  one: { prompt: number; wake: number };
  three: { prompt: number; wake: number };
  forwarded: { prompt: number; wake: number };
  failoverMs: number;
  leaseTtlMs: number;
}

/** Told when each load starts and ends (a profile samples the processes' CPU around it); bench:cluster passes none. */
export interface LoadObserver {
  start(label: string): Promise<void> | void;
  end(label: string, served: number, seconds: number): Promise<void> | void;
}

const AGENTS_PER_NODE = 30;
const WARM_UP_SECONDS = 3;
const CONNECTIONS = 48;

/** 2xx answers per second of one load. */
function served(result: LoadResult): number {
  return result.requests === 0 ? 0 : result.requestsPerSecond * ((result.requests - result.non2xx - result.errors) / result.requests);
}

async function createThrough(node: ClusterNode, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `${prefix}-${i}`;
    const reply = await call(node.url, 'POST', '/api/control/agents', { json: { agent_id: id } });
    if (reply.status !== 201) throw new Error(`create ${id}: ${reply.status} ${reply.text}`);
    ids.push(id);
  }
  return ids;
}

/**
 * One load per (node, agents) pair at once, the connections split evenly, all from one
 * load-generator process (as the one-node load has); the sum of their 2xx/s.
 */
async function loads(pairs: Array<{ node: ClusterNode; agents: string[] }>, route: 'prompt' | 'wake', seconds: number, label: string, observer?: LoadObserver): Promise<number> {
  await observer?.start(`${label} ${route}`);
  const body = route === 'prompt' ? JSON.stringify({ text: 'bench:cluster' }) : JSON.stringify({ reason: 'bench:cluster' });
  const results = await runLoads(
    pairs.map(({ node, agents }) => ({ base: node.url, paths: agents.map((id) => `/api/control/agents/${id}/${route}`), body, connections: Math.floor(CONNECTIONS / pairs.length), durationSeconds: seconds })),
  );
  const rate = results.reduce((sum, result) => sum + served(result), 0);
  await observer?.end(`${label} ${route}`, rate, seconds);
  return rate;
}

export async function nodeFigures(oneUrl: string, threeUrl: string, seconds: number, leaseTtlMs: number, observer?: LoadObserver): Promise<NodeFigures> {
  const args = ['--lease-ttl-ms', String(leaseTtlMs)];
  // Both sets run throughout, so their loads interleave one, three, three, one: the machine's
  // drift (a vacuum, another tenant) falls on both alike. The idle set only renews its leases.
  const single = await startNodes({ storeUrl: oneUrl, count: 1, prefix: 'one', args });
  const set = await startNodes({ storeUrl: threeUrl, count: 3, prefix: 'three', args });
  try {
    const [node] = single.nodes as [ClusterNode];
    const nodes = set.nodes;
    await Promise.all([node, ...nodes].map((n) => n.listening()));
    const alone = [{ node, agents: await createThrough(node, 'one', AGENTS_PER_NODE * 3) }];
    const owned = await Promise.all(nodes.map(async (n, i) => ({ node: n, agents: await createThrough(n, `three-${i}`, AGENTS_PER_NODE) })));
    const interleaved = async (route: 'prompt' | 'wake'): Promise<{ one: number; three: number }> => {
      // Unmeasured first: each process compiles the route's hot code as its requests come (V8 tiers
      // a function up by its calls), so each node gets about the one node's warm-up count of
      // requests (three nodes, each at about a third of the rate: three times as long). The
      // figure is the steady overhead of three nodes, not three processes' start.
      const warmOne = await loads(alone, route, WARM_UP_SECONDS, 'warm-up one', observer);
      const warmThree = await loads(owned, route, WARM_UP_SECONDS * owned.length, 'warm-up three', observer);
      progress(`cluster nodes, ${route} warm-up (not counted): one ${warmOne.toFixed(0)}, three ${warmThree.toFixed(0)} /s`);
      const one1 = await loads(alone, route, seconds, 'one', observer);
      const three1 = await loads(owned, route, seconds, 'three', observer);
      const three2 = await loads(owned, route, seconds, 'three', observer);
      const one2 = await loads(alone, route, seconds, 'one', observer);
      progress(`cluster nodes, ${route}: one ${one1.toFixed(0)}, three ${three1.toFixed(0)}, three ${three2.toFixed(0)}, one ${one2.toFixed(0)} /s`);
      return { one: (one1 + one2) / 2, three: (three1 + three2) / 2 };
    };
    const prompt = await interleaved('prompt');
    const wake = await interleaved('wake');
    const one = { prompt: prompt.one, wake: wake.one };
    const three = { prompt: prompt.three, wake: wake.three };
    await single.close();
    // Every request to a node that does not hold its agent: each is forwarded once.
    const elsewhere = owned.map(({ agents }, i) => ({ node: nodes[(i + 1) % nodes.length] as ClusterNode, agents }));
    const forwarded = { prompt: await loads(elsewhere, 'prompt', seconds, 'forwarded', observer), wake: await loads(elsewhere, 'wake', seconds, 'forwarded', observer) };
    progress(`cluster nodes: one node ${one.prompt.toFixed(0)} prompts/s, ${one.wake.toFixed(0)} wakes/s; three nodes ${three.prompt.toFixed(0)} / ${three.wake.toFixed(0)}; all forwarded ${forwarded.prompt.toFixed(0)} / ${forwarded.wake.toFixed(0)}`);

    // Failover: the owner of a busy agent dies; a prompt through another node until answered.
    const [n1, n2] = nodes as [ClusterNode, ClusterNode];
    const busy = (owned[0] as { agents: string[] }).agents[0] as string;
    await call(n1.url, 'POST', `/api/control/agents/${busy}/prompt`, { json: { text: '/exec sleep 30' } });
    await n1.kill();
    const killed = performance.now();
    for (;;) {
      const reply = await call(n2.url, 'POST', `/api/control/agents/${busy}/prompt`, { json: { text: 'after the kill' } }).catch(() => null);
      if (reply?.status === 200) break;
      if (performance.now() - killed > 120_000) throw new Error('failover: not served within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const failoverMs = performance.now() - killed;
    progress(`cluster nodes: failover ${failoverMs.toFixed(0)} ms (lease TTL ${leaseTtlMs} ms)`);
    return { one, three, forwarded, failoverMs, leaseTtlMs };
  } finally {
    await Promise.all([single.close(), set.close()]);
  }
}
