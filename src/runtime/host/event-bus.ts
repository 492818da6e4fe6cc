import type { AgentEvent } from '../../domain/index.js';

type Listener = (event: AgentEvent) => void;

/** Fans committed events out to live subscribers (SSE streams, tests, turn workers). */
export class EventBus {
  private readonly byAgent = new Map<string, Set<Listener>>();
  private readonly all = new Set<Listener>();

  subscribe(agentId: string | null, listener: Listener): () => void {
    const set = agentId === null ? this.all : this.setFor(agentId);
    set.add(listener);
    return () => {
      set.delete(listener);
      if (agentId !== null && set.size === 0) this.byAgent.delete(agentId);
    };
  }

  /**
   * Resolves true at the next committed event of `agentId` that `match` accepts, or false once
   * `timeoutMs` passed. `already` is asked once subscribed: true there means the awaited change
   * happened before (so it is not missed between the caller's check and the subscription).
   */
  until(agentId: string, match: (event: AgentEvent) => boolean, timeoutMs: number, already: () => boolean = () => false): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (met: boolean): void => {
        clearTimeout(timer);
        unsubscribe();
        resolve(met);
      };
      const unsubscribe = this.subscribe(agentId, (event) => {
        if (match(event)) done(true);
      });
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      timer.unref();
      if (already()) done(true);
    });
  }

  publish(events: readonly AgentEvent[]): void {
    for (const event of events) {
      for (const listener of this.byAgent.get(event.agent_id) ?? []) listener(event);
      for (const listener of this.all) listener(event);
    }
  }

  private setFor(agentId: string): Set<Listener> {
    let set = this.byAgent.get(agentId);
    if (!set) {
      set = new Set();
      this.byAgent.set(agentId, set);
    }
    return set;
  }
}
