import { DomainError } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import { KeyedQueue } from './keyed-queue.js';

/** What a create's Idempotency-Key names, durably: the agent it created and the body it was created with. */
interface CreateKeyRecord {
  agent_id: string;
  fingerprint: string;
}

/**
 * The Idempotency-Keys of creates (seed 002 acceptance #1). A key names the identity durably
 * before the identity is written (`create:<key>` → agent id), so a retry after a crash at any
 * later point resumes that agent, never a second one; creates with one key run one at a time.
 */
export class CreateKeys {
  private readonly queue = new KeyedQueue();

  constructor(
    private readonly store: Store,
    private readonly fencingToken: () => number,
    /** In a cluster: the lease token of the agent a key names (taken if need be); the key is then written once, fenced by it. */
    private readonly agentToken?: (agentId: string) => Promise<number>,
  ) {}

  /** Runs `create` alone for its key (no key: at once). */
  run<T>(key: string | undefined, create: (key: string | null) => Promise<T>): Promise<T> {
    return key === undefined ? create(null) : this.queue.run(key, () => create(key));
  }

  /** The agent an earlier create with this key named, whatever its body (where a retried create is served). */
  async agentOf(key: string): Promise<string | undefined> {
    return ((await this.store.getGlobal(`create:${key}`)) as CreateKeyRecord | undefined)?.agent_id;
  }

  /** The agent an earlier create with this key named; `idempotency_conflict` if that create had another body. */
  async prior(key: string, fingerprint: string): Promise<string | undefined> {
    const prior = (await this.store.getGlobal(`create:${key}`)) as CreateKeyRecord | undefined;
    if (prior && prior.fingerprint !== fingerprint) throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another body');
    return prior?.agent_id;
  }

  /**
   * Records the key before the identity is written; returns the record the key holds afterwards.
   * In a cluster two nodes may create with one key at once: the first record written stays, and
   * the other create goes on with the agent it names.
   */
  async remember(key: string, record: CreateKeyRecord): Promise<CreateKeyRecord> {
    if (!this.agentToken) {
      await this.store.putGlobal(`create:${key}`, record, this.fencingToken());
      return record;
    }
    const token = await this.agentToken(record.agent_id);
    const kept = (await this.store.putGlobalOnce(`create:${key}`, record, { agent_id: record.agent_id, agent_fencing_token: token })) as CreateKeyRecord;
    if (kept.fingerprint !== record.fingerprint) throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another body');
    return kept;
  }
}
