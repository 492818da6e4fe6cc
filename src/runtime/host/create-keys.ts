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
  ) {}

  /** Runs `create` alone for its key (no key: at once). */
  run<T>(key: string | undefined, create: (key: string | null) => Promise<T>): Promise<T> {
    return key === undefined ? create(null) : this.queue.run(key, () => create(key));
  }

  /** The agent an earlier create with this key named; `idempotency_conflict` if that create had another body. */
  async prior(key: string, fingerprint: string): Promise<string | undefined> {
    const prior = (await this.store.getGlobal(`create:${key}`)) as CreateKeyRecord | undefined;
    if (prior && prior.fingerprint !== fingerprint) throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another body');
    return prior?.agent_id;
  }

  async remember(key: string, record: CreateKeyRecord): Promise<void> {
    await this.store.putGlobal(`create:${key}`, record, this.fencingToken());
  }
}
