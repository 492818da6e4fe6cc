import { access, mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DomainError } from '../../domain/index.js';
import { assertAgentId } from '../shared/commit-rules.js';
import { pageSeqs } from '../shared/event-page.js';
import type { Commit, CommitResult, EventPage, EventPageQuery, Lease, RosterEntry, Store, StoredAgent } from '../store.js';
import { AgentSlot } from './agent-slot.js';
import type { PreparedCommit } from './agent-slot.js';
import { AppendHandles } from './append-handles.js';
import { DirectorySyncer } from './directory-syncer.js';
import { isNotFound, removeDeadTempFiles, storeError } from './fs-util.js';
import { GlobalSpace } from './global-space.js';
import { LeaseFile } from './lease-file.js';
import { releasePidLock, tryTakePidLock } from './pid-lock.js';

export interface LowdbStoreOptions {
  dataDir: string;
  /**
   * Take `writer.lock` so that one process at a time writes the directory (default true). Tests
   * that run two processes on one directory to exercise lease takeover turn it off.
   */
  exclusiveProcessLock?: boolean;
}

/**
 * The embedded store: JSON files under one data directory, written by lowdb through a durable
 * adapter, and per-agent append-only JSONL event logs. See `src/store/README.md` for the layout,
 * the commit protocol, group commit and the lease rules.
 */
export class LowdbStore implements Store {
  readonly kind = 'lowdb';
  readonly location: string;

  private readonly agentsDir: string;
  private readonly writerLockPath: string;
  private readonly exclusiveProcessLock: boolean;
  private readonly directories = new DirectorySyncer();
  private readonly handles = new AppendHandles();
  private readonly lease: LeaseFile;
  private readonly globals: GlobalSpace;
  private readonly slots = new Map<string, AgentSlot>();
  private state: 'closed' | 'open' | 'closing' = 'closed';
  private holdsWriterLock = false;
  /** Bumped when this instance takes a fencing token it did not hold before; see `CachedLoad`. */
  private generation = 0;
  private heldToken: number | null = null;

  constructor(options: LowdbStoreOptions) {
    this.location = resolve(options.dataDir);
    this.agentsDir = join(this.location, 'agents');
    this.writerLockPath = join(this.location, 'writer.lock');
    this.exclusiveProcessLock = options.exclusiveProcessLock ?? true;
    this.lease = new LeaseFile(this.location, this.directories);
    this.globals = new GlobalSpace(this.location, this.directories, this.lease, () => this.generation);
  }

  async open(): Promise<void> {
    if (this.state === 'open') return;
    if (this.state === 'closing') throw this.unavailable('is closing');
    try {
      await mkdir(this.agentsDir, { recursive: true });
    } catch (err) {
      throw storeError(`creating data directory ${this.location}`, err);
    }
    if (this.exclusiveProcessLock) {
      const lock = await tryTakePidLock(this.writerLockPath).catch((err: unknown) => {
        throw storeError(`taking ${this.writerLockPath}`, err);
      });
      if (!lock.taken) {
        throw new DomainError('lease_lost', `data directory ${this.location} is already used by process ${lock.pid}`, {
          pid: lock.pid,
          lock: this.writerLockPath,
        });
      }
      this.holdsWriterLock = true;
    }
    try {
      await removeDeadTempFiles(this.location);
      await this.globals.load();
    } catch (err) {
      await this.releaseWriterLock();
      throw storeError(`opening ${this.location}`, err);
    }
    this.state = 'open';
  }

  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    try {
      await Promise.all([...this.slots.values()].map((slot) => slot.idle()));
      await this.globals.idle();
      await this.lease.idle();
      await this.handles.closeAll();
    } finally {
      this.slots.clear();
      this.globals.forget();
      await this.releaseWriterLock();
      this.state = 'closed';
    }
  }

  async acquireLease(holder: string, ttl_ms: number, now: Date): Promise<Lease> {
    this.assertOpen();
    const lease = await this.lease.acquire(holder, ttl_ms, now);
    if (lease.fencing_token !== this.heldToken) {
      // Someone else may have written since this instance cached agents and globals.
      this.heldToken = lease.fencing_token;
      this.generation += 1;
    }
    return lease;
  }

  async renewLease(lease: Lease, ttl_ms: number, now: Date): Promise<Lease> {
    this.assertOpen();
    return this.lease.renew(lease, ttl_ms, now);
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.assertOpen();
    await this.lease.release(lease);
  }

  async readLease(): Promise<Lease | null> {
    this.assertOpen();
    return this.lease.read();
  }

  /** Agents whose doc.json exists (a directory left by a crash before the first commit is not an agent). */
  async listAgentIds(): Promise<string[]> {
    this.assertOpen();
    let names: string[];
    try {
      names = (await readdir(this.agentsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw storeError(`listing ${this.agentsDir}`, err);
    }
    const present = await Promise.all(names.map((name) => this.hasDoc(name)));
    return names.filter((_, i) => present[i]).sort();
  }

  /** Reads every agent's doc.json: linear in the number of agents (an index file would make it O(1) reads). */
  async listRoster(): Promise<RosterEntry[]> {
    const ids = await this.listAgentIds();
    const entries: RosterEntry[] = [];
    for (const agent_id of ids) {
      const state = await this.slot(agent_id).committed();
      if (state !== null) entries.push({ agent_id, version: state.version, roster: structuredClone(state.roster ?? null) });
    }
    return entries;
  }

  evictAgent(agent_id: string): void {
    assertAgentId(agent_id);
    if (this.slots.get(agent_id)?.isIdle() === true) this.slots.delete(agent_id);
  }

  async loadAgent(agent_id: string): Promise<StoredAgent | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    const state = await this.slot(agent_id).committed();
    if (state === null) return null;
    const { version, doc, last_event_seq } = state;
    return structuredClone({ version, doc, last_event_seq });
  }

  commit(commit: Commit): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      this.assertOpen();
      assertAgentId(commit.agent_id);
      const prepared: PreparedCommit = {
        expected_version: commit.expected_version,
        fencing_token: commit.fencing_token,
        doc: toJson('document', commit.doc ?? null),
        roster: commit.roster === undefined ? undefined : toJson('roster entry', commit.roster),
        events: commit.events.map((event) => ({
          type: event.type,
          ts: event.ts,
          payloadJson: stringify(`payload of ${event.type}`, event.payload),
        })),
        resolve,
        reject,
      };
      // Queued synchronously, so commits issued in the same tick share a flush.
      this.slot(commit.agent_id).enqueue(prepared);
    });
  }

  async readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage> {
    this.assertOpen();
    assertAgentId(agent_id);
    return this.slot(agent_id).readEvents((oldest, newest) => pageSeqs(query, oldest, newest));
  }

  async getGlobal(key: string): Promise<unknown> {
    this.assertOpen();
    return this.globals.get(key);
  }

  async putGlobal(key: string, value: unknown, fencing_token: number): Promise<void> {
    this.assertOpen();
    await this.globals.put(key, value, fencing_token);
  }

  private slot(agent_id: string): AgentSlot {
    let slot = this.slots.get(agent_id);
    if (slot === undefined) {
      slot = new AgentSlot(agent_id, {
        agentsDir: this.agentsDir,
        directories: this.directories,
        handles: this.handles,
        lease: this.lease,
        generation: () => this.generation,
      });
      this.slots.set(agent_id, slot);
    }
    return slot;
  }

  private async hasDoc(agent_id: string): Promise<boolean> {
    try {
      await access(join(this.agentsDir, agent_id, 'doc.json'));
      return true;
    } catch {
      return false;
    }
  }

  private async releaseWriterLock(): Promise<void> {
    if (!this.holdsWriterLock) return;
    this.holdsWriterLock = false;
    await releasePidLock(this.writerLockPath).catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.state !== 'open') throw this.unavailable(this.state === 'closing' ? 'is closing' : 'is not open');
  }

  private unavailable(why: string): DomainError {
    return new DomainError('store_unavailable', `store ${this.location} ${why}`);
  }
}

function stringify(what: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new DomainError('invalid_request', `${what} is not JSON-serializable: ${String(err)}`);
  }
  if (text === undefined) throw new DomainError('invalid_request', `${what} is not JSON-serializable`);
  return text;
}

/** The value as it will read back from disk, so a loaded doc is the same before and after a restart. */
function toJson(what: string, value: unknown): unknown {
  return JSON.parse(stringify(what, value));
}
