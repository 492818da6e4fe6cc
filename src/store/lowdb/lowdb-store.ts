import { mkdir } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { DomainError } from '../../domain/index.js';
import { assertAgentId, commitFence } from '../shared/commit-rules.js';
import { acquireEmbeddedAgentLease, embeddedAgentLeaseState, renewEmbeddedAgentLeases } from '../shared/embedded-agent-leases.js';
import { assertClaim, assertWakeAt, locationOf, MemoryNodeRegistry } from '../shared/node-rules.js';
import { pageSeqs } from '../shared/event-page.js';
import { agentListingHash, rosterPageOf } from '../shared/roster-query.js';
import type {
  AgentLease,
  AgentLeaseState,
  AgentLocation,
  Commit,
  CommitResult,
  EventPage,
  EventPageQuery,
  HeldAgentLease,
  NodeRecord,
  Lease,
  RenewedAgentLeases,
  RosterEntry,
  RosterPage,
  RosterQuery,
  Store,
  StoredAgent,
} from '../store.js';
import { AgentFiles } from './agent-files.js';
import { OpenFiles } from './open-files.js';
import { CommitWriter } from './commit-writer.js';
import { committedDoc, committedEvents } from './committed-reads.js';
import { DirectorySyncer } from './directory-syncer.js';
import { toJson } from '../shared/to-json.js';
import { removeDeadTempFiles, storeError } from './fs-util.js';
import { GlobalSpace } from './global-space.js';
import { LeaseFile } from './lease-file.js';
import { WriterLock } from './writer-lock.js';
import { RosterIndex } from './roster-index.js';
import { Uncheckpointed } from './uncheckpointed.js';
import { recoverIndex } from './wal-recovery.js';
import { WriteAheadLog } from './write-ahead-log.js';

export interface LowdbStoreOptions {
  dataDir: string;
  /**
   * Take `writer.lock` so that one process at a time writes the directory (default true). Tests
   * that run two processes on one directory to exercise lease takeover turn it off.
   */
  exclusiveProcessLock?: boolean;
  /**
   * A checkpoint round starts once the write-ahead log holds this many bytes since the last one
   * (default 16 MiB, e.g. `4 * 1024 * 1024` for shorter recoveries).
   */
  checkpointBytes?: number;
  /**
   * ... or once this many agents have commits the files lack (default 1,024): what bounds the
   * memory holding them, now that a log record holds only a document's changes (e.g. `1024`).
   */
  checkpointAgents?: number;
}

/** Per-agent state kept in memory, for tests of eviction and boundedness. */
export interface LowdbResidentState {
  agents: number;
  openFiles: number;
  /** Agents committed since the last checkpoint (their files are not current or not fsynced yet). */
  uncheckpointedAgents: number;
}

const DEFAULT_CHECKPOINT_BYTES = 16 * 1024 * 1024;
const DEFAULT_CHECKPOINT_AGENTS = 1024;

/**
 * The embedded store: a shared write-ahead log that makes commits durable (one fdatasync per
 * batch across agents, and nothing else on the commit path), per-agent doc.json and JSONL event
 * segments written and fsynced by checkpoint rounds (commits not yet checkpointed are read from
 * memory), and `roster.tsv`, the index every listing reads. See
 * `src/store/README.md` for the layout, the commit protocol, recovery and the lease rules.
 */
export class LowdbStore implements Store {
  readonly kind = 'lowdb';
  readonly location: string;

  private readonly writerLockPath: string;
  private readonly exclusiveProcessLock: boolean;
  private readonly directories = new DirectorySyncer();
  private readonly handles = new OpenFiles();
  private readonly files: AgentFiles;
  private readonly lease: LeaseFile;
  private readonly globals: GlobalSpace;
  private readonly index = new RosterIndex();
  private readonly nodes = new MemoryNodeRegistry();
  private readonly uncheckpointed = new Uncheckpointed();
  private readonly wal: WriteAheadLog;
  private readonly writer: CommitWriter;
  /** Agents whose files are known to end at their `last_event_seq` (checked once per process). */
  private repaired = new Set<string>();
  private readonly repairing = new Map<string, Promise<void>>();
  private state: 'closed' | 'open' | 'closing' = 'closed';
  private writerLock: WriterLock | null = null;
  /** Bumped when this instance takes a fencing token it did not hold before; see `CachedLoad`. */
  private generation = 0;
  private heldToken: number | null = null;

  constructor(options: LowdbStoreOptions) {
    this.location = resolve(options.dataDir);
    this.writerLockPath = join(this.location, 'writer.lock');
    this.exclusiveProcessLock = options.exclusiveProcessLock ?? true;
    this.files = new AgentFiles(join(this.location, 'agents'), this.handles, this.directories);
    this.lease = new LeaseFile(this.location, this.directories);
    this.globals = new GlobalSpace(this.location, this.directories, this.lease, () => this.generation);
    this.wal = new WriteAheadLog(this.location, this.directories);
    this.writer = new CommitWriter({
      index: this.index,
      lease: this.lease,
      uncheckpointed: this.uncheckpointed,
      files: this.files,
      directories: this.directories,
      wal: this.wal,
      rosterPath: join(this.location, 'roster.tsv'),
      checkpointBytes: options.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES,
      checkpointAgents: options.checkpointAgents ?? DEFAULT_CHECKPOINT_AGENTS,
      ensureRepaired: (agent_id) => (this.repaired.has(agent_id) || !this.isWriter() ? null : this.ensureRepaired(agent_id)),
      mayCheckpoint: () => this.mayCheckpoint(),
    });
  }

  async open(): Promise<void> {
    if (this.state === 'open') return;
    if (this.state === 'closing') throw this.unavailable('is closing');
    try {
      await mkdir(this.files.agentsDir, { recursive: true });
      await this.wal.create();
    } catch (err) {
      throw storeError(`creating data directory ${this.location}`, err);
    }
    if (this.exclusiveProcessLock) {
      let result;
      try {
        result = WriterLock.take(this.writerLockPath);
      } catch (err) {
        throw storeError(`taking ${this.writerLockPath}`, err);
      }
      if (!result.taken) {
        const holder = result.pid === null ? 'another process' : `process ${result.pid}`;
        throw new DomainError('lease_lost', `data directory ${this.location} is already used by ${holder}`, {
          pid: result.pid,
          lock: this.writerLockPath,
        });
      }
      this.writerLock = result.lock;
    }
    try {
      await removeDeadTempFiles(this.location);
      await this.globals.load();
      await this.loadIndex();
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
      await this.writer.idle();
      // A clean close leaves no log to replay; if the round fails, the next open replays it.
      await this.writer.checkpoint().catch(() => undefined);
      await this.writer.idle();
      await this.globals.idle();
      await this.lease.idle();
      await this.wal.close();
      this.handles.closeAll();
    } finally {
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
      // Without writer.lock another process may have committed since the index was read.
      if (!this.exclusiveProcessLock) {
        await this.writer.idle();
        await this.loadIndex();
      }
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

  /** Rides on `lease.json` (`shared/embedded-agent-leases.ts`): its holder writes every agent. */
  async acquireAgentLease(agent_id: string, holder: string, ttl_ms: number): Promise<AgentLease> {
    this.assertOpen();
    assertAgentId(agent_id);
    return acquireEmbeddedAgentLease(await this.lease.read(), (lease) => this.ownsLease(lease), agent_id, holder, ttl_ms);
  }

  async renewAgentLeases(holder: string, leases: HeldAgentLease[], ttl_ms: number): Promise<RenewedAgentLeases> {
    this.assertOpen();
    return renewEmbeddedAgentLeases(await this.lease.read(), (lease) => this.ownsLease(lease), holder, leases, ttl_ms);
  }

  /** The data directory's lease stays: nothing to release. */
  async releaseAgentLease(lease: AgentLease, wake_at: string | null = null): Promise<void> {
    this.assertOpen();
    assertAgentId(lease.agent_id);
    assertWakeAt(wake_at);
  }

  async readAgentLease(agent_id: string): Promise<AgentLeaseState | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    return embeddedAgentLeaseState(await this.lease.read(), agent_id);
  }

  /** Nothing to claim: the holder of the store lease writes every agent and runs every timer. */
  async claimDueAgents(holder: string, ttl_ms: number, limit: number): Promise<AgentLease[]> {
    this.assertOpen();
    assertClaim(holder, ttl_ms, limit);
    return [];
  }

  async heartbeatNode(node_id: string, advertise_url: string, ttl_ms: number): Promise<NodeRecord> {
    this.assertOpen();
    return this.nodes.heartbeat(node_id, advertise_url, ttl_ms);
  }

  async removeNode(node_id: string): Promise<void> {
    this.assertOpen();
    this.nodes.remove(node_id);
  }

  async listLiveNodes(): Promise<NodeRecord[]> {
    this.assertOpen();
    return this.nodes.live();
  }

  async locateAgent(agent_id: string): Promise<AgentLocation | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    return locationOf(embeddedAgentLeaseState(await this.lease.read(), agent_id), this.nodes.live());
  }

  /** From the roster index: no directory is listed or opened. */
  async listAgentIds(): Promise<string[]> {
    this.assertOpen();
    return [...this.index.ids()];
  }

  /** From the roster index: no document is read. */
  async listRoster(): Promise<RosterEntry[]> {
    this.assertOpen();
    return this.index.ids().map((agent_id) => {
      const entry = this.index.get(agent_id);
      return {
        agent_id,
        version: entry?.version ?? 0,
        roster: entry?.rosterJson === undefined ? null : (JSON.parse(entry.rosterJson) as unknown),
      };
    });
  }

  /** From the roster index, as `listRoster`. */
  async listRosterPage(query: RosterQuery): Promise<RosterPage> {
    this.assertOpen();
    return rosterPageOf(this.index.ids(), (id) => this.index.get(id), query);
  }

  /** A scan of the roster index (the runtime on this store keeps its own token index). */
  async agentForTriggerHash(hash: string): Promise<string | null> {
    this.assertOpen();
    return agentListingHash(this.index.ids(), (id) => this.index.get(id), hash);
  }

  /** Closes the agent's idle segment files (its uncheckpointed commits stay until the next checkpoint). */
  evictAgent(agent_id: string): void {
    assertAgentId(agent_id);
    this.handles.closeUnder(`${this.files.dir(agent_id)}${sep}`);
    this.writer.forget(agent_id);
    // Until the next round writes it, its latest version is kept as text, not as the caller's objects.
    this.uncheckpointed.write(agent_id)?.docJson();
  }

  /** Counts of what the store holds in memory (tests: eviction and boundedness). */
  residentState(): LowdbResidentState {
    return { agents: this.index.size, openFiles: this.handles.openCount, uncheckpointedAgents: this.writer.dirtyAgents };
  }

  /** Runs a checkpoint round now (tests; close does it too). */
  checkpoint(): Promise<void> {
    this.assertOpen();
    return this.writer.checkpoint();
  }

  async loadAgent(agent_id: string): Promise<StoredAgent | null> {
    this.assertOpen();
    assertAgentId(agent_id);
    if (this.index.get(agent_id) === undefined) return null;
    await this.ensureRepaired(agent_id);
    const stored = await committedDoc(this.files, this.uncheckpointed, agent_id);
    if (stored === null) {
      if (!this.isWriter()) return null;
      throw new DomainError('store_unavailable', `agent ${agent_id} is listed but its doc.json is missing`);
    }
    return { version: stored.version, doc: stored.doc, last_event_seq: stored.last_event_seq };
  }

  commit(commit: Commit): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      this.assertOpen();
      assertAgentId(commit.agent_id);
      // Queued synchronously, so commits issued in the same tick share a batch. The agent token
      // is the store token here (shared/embedded-agent-leases.ts).
      this.writer.push({
        agent_id: commit.agent_id,
        expected_version: commit.expected_version,
        fencing_token: commitFence(commit).token,
        doc: commit.doc ?? null,
        rosterJson: commit.roster === undefined ? undefined : toJson('roster entry', () => JSON.stringify(commit.roster)),
        events: commit.events.map((event) => ({
          type: event.type,
          ts: event.ts,
          payloadJson: toJson(`payload of ${event.type}`, () => JSON.stringify(event.payload)),
        })),
        resolve,
        reject,
      });
    });
  }

  async readEvents(agent_id: string, query: EventPageQuery): Promise<EventPage> {
    this.assertOpen();
    assertAgentId(agent_id);
    const newest_seq = this.index.get(agent_id)?.last_event_seq ?? 0;
    // Nothing deletes old segments, so the retained window starts at the first event.
    const oldest_seq = newest_seq === 0 ? 0 : 1;
    if (newest_seq > 0) await this.ensureRepaired(agent_id);
    try {
      const events = await committedEvents(this.files, this.uncheckpointed, agent_id, pageSeqs(query, oldest_seq, newest_seq));
      return { events, oldest_seq, newest_seq };
    } catch (err) {
      throw storeError(`reading events of agent ${agent_id}`, err);
    }
  }

  async getGlobal(key: string): Promise<unknown> {
    this.assertOpen();
    return this.globals.get(key);
  }

  async putGlobal(key: string, value: unknown, fencing_token: number): Promise<void> {
    this.assertOpen();
    await this.globals.put(key, value, fencing_token);
  }

  /** One writer process: creates of one key are serialized by the runtime, so the read and the write cannot interleave with another's. */
  async putGlobalOnce(key: string, value: unknown, fence: { agent_id: string; agent_fencing_token: number }): Promise<unknown> {
    this.assertOpen();
    const existing = await this.globals.get(key);
    if (existing !== undefined) return existing;
    await this.globals.put(key, value, fence.agent_fencing_token);
    return this.globals.get(key);
  }

  /** Rebuilds the index from `roster.tsv` and the write-ahead log (at open, and after a takeover). */
  private async loadIndex(): Promise<void> {
    // The active log file must be replayed too, so it is closed first.
    await this.wal.close();
    const recovered = await recoverIndex({
      rosterPath: join(this.location, 'roster.tsv'),
      files: this.files,
      wal: this.wal,
      repair: this.isWriter(),
      cutTornTails: this.exclusiveProcessLock,
    });
    this.index.replace(recovered.entries);
    this.repaired = recovered.repaired;
    this.uncheckpointed.replace(recovered.uncheckpointed);
    this.writer.reset(recovered.dirty, recovered.rosterMissing);
  }

  /**
   * Once per agent and process, before anything reads or appends to its files: removes dead temp
   * files and cuts its event log back to what the index acknowledges (an unacknowledged tail, a
   * torn line, segments of a creation that never committed). Readers of a directory another
   * instance writes change nothing.
   */
  private ensureRepaired(agent_id: string): Promise<void> {
    if (this.repaired.has(agent_id) || !this.isWriter()) return Promise.resolve();
    let repairing = this.repairing.get(agent_id);
    if (repairing === undefined) {
      repairing = (async () => {
        await removeDeadTempFiles(this.files.dir(agent_id));
        await this.files.eventLog(agent_id).recover(this.index.get(agent_id)?.last_event_seq ?? 0);
        this.repaired.add(agent_id);
      })()
        .catch((err: unknown) => {
          throw storeError(`loading agent ${agent_id}`, err);
        })
        .finally(() => this.repairing.delete(agent_id));
      this.repairing.set(agent_id, repairing);
    }
    return repairing;
  }

  /** The only process writing the directory, or the holder of a lease this instance acquired. */
  private isWriter(): boolean {
    return this.exclusiveProcessLock || this.heldToken !== null;
  }

  private async mayCheckpoint(): Promise<boolean> {
    if (this.exclusiveProcessLock) return true;
    const lease = await this.lease.read();
    return lease !== null && this.ownsLease(lease);
  }

  /** This instance acquired the lease's token under the holder the file names. */
  private ownsLease(lease: Lease): boolean {
    return this.lease.holderOf(lease.fencing_token) === lease.holder;
  }

  private async releaseWriterLock(): Promise<void> {
    const lock = this.writerLock;
    this.writerLock = null;
    try {
      lock?.release();
    } catch {
      // Closing the descriptor released the kernel lock even if the unlink failed.
    }
  }

  private assertOpen(): void {
    if (this.state !== 'open') throw this.unavailable(this.state === 'closing' ? 'is closing' : 'is not open');
  }

  private unavailable(why: string): DomainError {
    return new DomainError('store_unavailable', `store ${this.location} ${why}`);
  }
}
