import { performance } from 'node:perf_hooks';

/** Where an agent another live node holds is served: that node and its advertised address. */
export interface CachedRoute {
  holder: string;
  url: string;
}

export interface RouteCacheOptions {
  /** How long an entry is trusted (ms): well under the lease TTL (`ClusterNode`: a quarter of it). */
  maxAgeMs: number;
  /** Entries at most; the oldest goes first. */
  maxEntries: number;
  /** Monotonic ms (tests give their own). */
  now?: () => number;
}

/**
 * The routes a cluster node read for agents another live node holds (docs/cluster-design.md step
 * 6), so that a request forwarded there does not cost a `locateAgent` round trip each. An entry is
 * only ever a reason to forward, never to serve here (serving takes the agent's lease), and it is
 * replaced by every fresh route (a forward that failed, a holder that answered it does not hold
 * the agent) and forgotten `maxAgeMs` after it was read or last confirmed (the holder served a
 * request forwarded under it: it held the lease then).
 */
export class RouteCache {
  private readonly entries = new Map<string, CachedRoute & { at: number }>();
  private readonly now: () => number;

  constructor(private readonly options: RouteCacheOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  get(agentId: string): CachedRoute | undefined {
    const entry = this.entries.get(agentId);
    if (entry === undefined) return undefined;
    if (this.now() - entry.at >= this.options.maxAgeMs) {
      this.entries.delete(agentId);
      return undefined;
    }
    return { holder: entry.holder, url: entry.url };
  }

  set(agentId: string, route: CachedRoute): void {
    // Re-inserted, so the Map's order stays oldest first.
    this.entries.delete(agentId);
    this.entries.set(agentId, { holder: route.holder, url: route.url, at: this.now() });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.options.maxEntries) break;
      this.entries.delete(oldest);
    }
  }

  /** The holder served a request forwarded under this entry (so it held the lease then): the entry's age starts again. Another entry is left alone. */
  confirm(agentId: string, route: CachedRoute): void {
    const entry = this.entries.get(agentId);
    if (entry === undefined || entry.holder !== route.holder || entry.url !== route.url) return;
    if (this.now() - entry.at >= this.options.maxAgeMs) return;
    this.set(agentId, route);
  }

  delete(agentId: string): void {
    this.entries.delete(agentId);
  }

  get size(): number {
    return this.entries.size;
  }
}
