import type { AgentEvent } from '../domain/index.js';

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
