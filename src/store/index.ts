import { LowdbStore } from './lowdb/lowdb-store.js';
import type { LowdbStoreOptions } from './lowdb/lowdb-store.js';
import { MemoryStore } from './memory/memory-store.js';
import type { MemoryStoreOptions } from './memory/memory-store.js';
import { PostgresStore } from './postgres/postgres-store.js';
import type { PostgresStoreOptions } from './postgres/postgres-store.js';
import type { Store } from './store.js';

export type {
  AgentLease,
  AgentLeaseState,
  AgentLocation,
  Commit,
  CommitResult,
  CommittedEventsWatch,
  CommittedRange,
  EventPage,
  EventPageQuery,
  HeldAgentLease,
  Lease,
  NodeRecord,
  RenewedAgentLeases,
  RosterEntry,
  RosterPage,
  RosterQuery,
  NewEvent,
  Store,
  StoredAgent,
} from './store.js';
export { LowdbStore } from './lowdb/lowdb-store.js';
export type { LowdbStoreOptions } from './lowdb/lowdb-store.js';
export { MemoryStore } from './memory/memory-store.js';
export type { MemoryStoreOptions } from './memory/memory-store.js';
export { PostgresStore } from './postgres/postgres-store.js';
export type { PostgresStoreOptions } from './postgres/postgres-store.js';

export type CreateStoreOptions =
  | ({ kind: 'lowdb' } & LowdbStoreOptions)
  | ({ kind: 'memory' } & MemoryStoreOptions)
  | ({ kind: 'postgres' } & PostgresStoreOptions);

/** Builds an unopened store; call `open()` before use. */
export function createStore(options: CreateStoreOptions): Store {
  switch (options.kind) {
    case 'lowdb':
      return new LowdbStore(options);
    case 'memory':
      return new MemoryStore(options);
    case 'postgres':
      return new PostgresStore(options);
  }
}
