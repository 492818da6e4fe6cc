import { createActor, type Actor } from 'xstate';
import { hasId, supervisorMachine } from '../../../machines/index.js';
import { DomainError } from '../../domain/index.js';

type Shard = Actor<typeof supervisorMachine>;

/**
 * The supervisor actors live agents are attached to, a bounded number per shard (one parent for
 * every agent is quadratic in its children). A shard tells `onFailed` when a child actor threw.
 */
export class ShardPool {
  private readonly shards: Shard[] = [];
  private readonly shardOf = new Map<string, Shard>();

  constructor(
    private readonly capacity: number,
    private readonly onFailed: (agentId: string, error: string) => void,
  ) {}

  /**
   * Attaches a live agent actor to a shard: the one it was on, else the newest first; the shard's
   * hasCapacity guard decides whether it takes the agent, and when none does a new shard opens.
   * An error of the actor goes to its shard as AGENT.FAILED.
   */
  attach(agentId: string, actor: { subscribe(observer: { error: (error: unknown) => void }): unknown }): void {
    const shard = this.shardFor(agentId);
    actor.subscribe({ error: (error) => shard.send({ type: 'AGENT.FAILED', agentId, error: error instanceof Error ? error.message : String(error) }) });
  }

  /** The agent's actor stopped (passivated). */
  detach(agentId: string): void {
    this.shardOf.get(agentId)?.send({ type: 'AGENT.DETACHED', agentId });
    this.shardOf.delete(agentId);
  }

  /** The agent's cell retired: no shard is kept for it. */
  forget(agentId: string): void {
    this.shardOf.delete(agentId);
  }

  /** Shutdown: the supervisors refuse new agents, `passivateAll` detaches every live one, then they stop. */
  drain(passivateAll: () => void): void {
    for (const shard of this.shards) shard.send({ type: 'SHUTDOWN' });
    passivateAll();
    for (const shard of this.shards) shard.send({ type: 'DRAINED' });
  }

  private shardFor(agentId: string): Shard {
    const known = this.shardOf.get(agentId);
    if (known && this.tryAttach(known, agentId)) return known;
    for (let i = this.shards.length - 1; i >= 0; i--) {
      const shard = this.shards[i] as Shard;
      if (shard !== known && this.tryAttach(shard, agentId)) return shard;
    }
    const shard = createActor(supervisorMachine, { input: { shardId: this.shards.length, capacity: this.capacity } });
    shard.subscribe({ error: () => undefined });
    shard.on('agent.failed', (event) => this.onFailed(event.agentId, event.error));
    shard.start();
    this.shards.push(shard);
    if (!this.tryAttach(shard, agentId)) throw new DomainError('internal_error', `a new shard refused agent ${agentId}`);
    return shard;
  }

  private tryAttach(shard: Shard, agentId: string): boolean {
    shard.send({ type: 'AGENT.ATTACHED', agentId });
    if (!hasId(shard.getSnapshot().context.agents, agentId)) return false;
    this.shardOf.set(agentId, shard);
    return true;
  }
}
