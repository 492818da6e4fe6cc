import { performance } from 'node:perf_hooks';
import type { Store } from '../../store/store.js';
import type { AgentLeases } from './agent-leases.js';

/** Agents claimed per call; a full page is followed by another call at once. */
export const CLAIM_PAGE = 100;

export interface ClaimLoopOptions {
  store: Pick<Store, 'claimDueAgents'>;
  leases: Pick<AgentLeases, 'nodeId' | 'ttlMs' | 'install'>;
  /** A claimed agent: its lease is installed; loading it takes it over (timers re-armed, recovery). */
  take(agentId: string): Promise<void>;
  everyMs?: number;
  /** A claim failed (the store is away); the loop goes on. */
  onError?(error: unknown): void;
}

/**
 * The agents nobody holds (docs/cluster-design.md step 5): every second, `claimDueAgents` hands
 * this node the agents released with a due wake time and those whose holder stopped renewing
 * (the failover); each one is loaded, which re-arms its timers (an overdue one fires once, by the
 * timer contract) and recovers what its last holder left in doubt.
 */
export class ClaimLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: ClaimLoopOptions) {}

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.round().then((full) => this.schedule(full ? 0 : (this.options.everyMs ?? 1_000)));
    }, delay);
    this.timer.unref();
  }

  /** One claim; whether it returned a full page. */
  private async round(): Promise<boolean> {
    const { store, leases } = this.options;
    try {
      const sent = performance.now();
      const claimed = await store.claimDueAgents(leases.nodeId, leases.ttlMs, CLAIM_PAGE);
      for (const lease of claimed) leases.install(lease, sent);
      await Promise.all(claimed.map((lease) => this.options.take(lease.agent_id).catch((error: unknown) => this.options.onError?.(error))));
      return claimed.length === CLAIM_PAGE;
    } catch (error) {
      this.options.onError?.(error);
      return false;
    }
  }
}
