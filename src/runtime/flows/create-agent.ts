import { CreateAgentRequest, DomainError, type AgentSummary, type TriggerCapability } from '../../domain/index.js';
import { newAgentDoc } from '../agent/agent-doc.js';
import { newId, type Clock } from '../clock.js';
import type { AgentCells } from '../host/cells.js';
import type { CreateKeys } from '../host/create-keys.js';
import { assembleSummary, draftSummary } from '../records/views.js';
import type { Lifecycle } from './lifecycle.js';

/** What CreateAgent answers: the agent, its default capability (raw token, shown once) and whether it was a replay. */
export interface Created {
  agent: AgentSummary;
  external_trigger: TriggerCapability;
  replayed: boolean;
}

/** CreateAgent (seed 002 steps 1–6), through the agent's lane like every other write. */
export class AgentCreation {
  constructor(
    private readonly cells: Pick<AgentCells, 'create' | 'load' | 'mutate'>,
    private readonly keys: CreateKeys,
    private readonly lifecycle: Pick<Lifecycle, 'drain'>,
    private readonly clock: Clock,
    private readonly fencingToken: () => number,
  ) {}

  async create(request: CreateAgentRequest, options: { idempotency_key?: string } = {}): Promise<Created> {
    const req = CreateAgentRequest.parse(request);
    this.fencingToken();
    // Creates with one key run one after the other: a later one finds what the first recorded.
    return this.keys.run(options.idempotency_key, (key) => this.createOnce(req, key));
  }

  /**
   * With a key, the key names the identity durably before the identity is written, so a retry
   * after a crash at any later point resumes that agent: never a second identity (seed 002
   * acceptance #1).
   */
  private async createOnce(req: CreateAgentRequest, key: string | null): Promise<Created> {
    const fingerprint = JSON.stringify(req);
    const prior = key === null ? undefined : await this.keys.prior(key, fingerprint);
    let agentId = prior ?? req.agent_id ?? newId('agent');
    if (await this.cells.load(agentId)) {
      if (!prior) throw new DomainError('agent_exists', `agent ${agentId} already exists`, { agent_id: agentId });
      return this.resume(agentId);
    }
    if (key !== null && !prior) {
      // In a cluster another node may have recorded the key first: its agent is the one.
      const kept = await this.keys.remember(key, { agent_id: agentId, fingerprint });
      if (kept.agent_id !== agentId) {
        agentId = kept.agent_id;
        if (await this.cells.load(agentId)) return this.resume(agentId);
      }
    }
    const now = this.clock.now().toISOString();
    const doc = newAgentDoc(agentId, req, now);
    // Seed 002 steps 1–2: identity first, durably, in Created.
    let cell;
    try {
      ({ cell } = await this.cells.create(agentId, doc, async (tx) => {
        tx.cell.ensureActor();
        tx.actorChanged();
        tx.emit('agent_created', { agent_id: agentId, mission: doc.identity.mission });
      }));
    } catch (error) {
      if (error instanceof DomainError && error.code === 'version_conflict') throw new DomainError('agent_exists', `agent ${agentId} already exists`, { agent_id: agentId });
      throw error;
    }
    // Steps 3–6: checks, trigger + lease, first snapshot, commit to Active.
    const minted = await this.cells.mutate(agentId, async (tx) => {
      tx.send({ type: 'INITIALIZE' }, { reason: 'agent created', trigger: 'user' });
      await tx.flush();
      await this.lifecycle.drain(tx);
      return tx.minted.at(-1);
    });
    if (!minted) throw new DomainError('internal_error', 'initialization did not provision a capability');
    return { agent: assembleSummary(cell), external_trigger: minted, replayed: false };
  }

  /**
   * A retried create of an agent that exists under its key: an initialization the first attempt
   * did not finish is resumed (and shows the capability it mints), a finished one is answered as it is.
   */
  private async resume(agentId: string): Promise<Created> {
    const { summary, minted } = await this.cells.mutate(agentId, async (tx) => {
      if (tx.doc.state.phase === 'created') tx.send({ type: 'INITIALIZE' }, { reason: 'create retried', trigger: 'user' });
      await this.lifecycle.drain(tx);
      return { summary: draftSummary(tx), minted: tx.minted.at(-1) };
    }, { allowTerminated: true });
    const trigger = summary.active_external_triggers.at(0);
    return {
      agent: summary,
      external_trigger: minted ?? { trigger: trigger ?? { id: '', delivery_mode: 'wake_hint' as const, status: 'revoked' as const }, token: '', delivery_mode: 'wake_hint' as const },
      replayed: true,
    };
  }
}
