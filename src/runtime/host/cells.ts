import { DomainError } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import { AgentCell, parseDoc, type CellEnv, type RunOptions } from '../agent/agent-cell.js';
import type { AgentDoc } from '../agent/agent-doc.js';
import { recordAnswer, recordedAnswer } from '../agent/idempotency-ledger.js';
import { needsRecovery, rosterOf } from '../agent/roster.js';
import type { Tx } from '../agent/tx.js';
import type { MutationOptions } from '../api.js';
import { Soon } from '../soon.js';
import type { ResidentRoster } from './resident-roster.js';

/** How `mutate` runs an operation. */
export type MutateOptions<T> = MutationOptions &
  RunOptions & {
    /** The operation also applies to a terminated agent. */
    allowTerminated?: boolean;
    /** What the idempotency record keeps of the answer (default: all of it); never a capability token. */
    recordAs?: (value: T) => unknown;
    /** Ask the scheduler to look at the agent afterwards (default `true`). */
    kick?: boolean;
  };

/** What the cells need of the rest of the host, given once at construction. */
export interface CellsDeps {
  store: Store;
  roster: ResidentRoster;
  residentQuietAgents: number;
  /** The environment every cell gets, but for the two parts the cells provide (`settled`, `reload`). */
  env: Omit<CellEnv, 'settled' | 'reload'>;
  /** A cell was loaded from the store (its timers are armed by this). */
  loaded(cell: AgentCell): void;
  /**
   * In a cluster: takes the agent's lease before its first load or create (`lease_lost` when
   * another live node holds it). Absent for the embedded stores, whose store lease covers every agent.
   */
  take?(agentId: string): Promise<void>;
  /** A load found no such agent: what `take` acquired goes back. */
  untake?(agentId: string): void;
  /** A cell retired (its shard entry goes; in a cluster its lease is released with its wake time). */
  retired(cell: AgentCell): void;
  /** Asks the agent's scheduler to look at it again (after every mutation). */
  kick(agentId: string): void;
}

/**
 * The loaded agents, and the one seam every write goes through: `mutate`, an operation in the
 * agent's lane on a draft (`Tx`) committed at its end. A quiet agent (asleep with nothing to do,
 * stopped, terminated) retires once it settled, the least recently settled beyond
 * `residentQuietAgents` first; its next access loads it again.
 */
export class AgentCells {
  private readonly cells = new Map<string, AgentCell>();
  private readonly loading = new Map<string, Promise<AgentCell | null>>();
  /** Settled cells, least recently settled first; the ones beyond `residentQuietAgents` retire. */
  private readonly quiet = new Set<string>();
  /** Agents whose cell is checked for retirement on the next turn of the event loop. */
  private readonly retirements = new Soon((agentId) => this.retire(agentId));
  private readonly env: CellEnv;
  private closing = false;

  constructor(private readonly deps: CellsDeps) {
    this.env = { ...deps.env, settled: (cell) => this.noteSettled(cell.id), reload: (agentId) => this.cell(agentId) };
  }

  /** The loaded cell of the agent, if any (nothing is loaded for it). */
  get(agentId: string): AgentCell | undefined {
    return this.cells.get(agentId);
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** The agent's cell, loaded from the store if need be; `null` when no such agent exists. */
  async load(agentId: string): Promise<AgentCell | null> {
    const cached = this.cells.get(agentId);
    if (cached) return cached;
    let pending = this.loading.get(agentId);
    if (!pending) {
      pending = this.takeAndLoad(agentId).finally(() => this.loading.delete(agentId));
      this.loading.set(agentId, pending);
    }
    return pending;
  }

  /** The agent's cell; `agent_not_found` when there is none, `runtime_shutting_down` once closing. */
  async cell(agentId: string): Promise<AgentCell> {
    if (this.closing) throw new DomainError('runtime_shutting_down', 'the runtime is shutting down');
    const cell = await this.load(agentId);
    if (!cell) throw new DomainError('agent_not_found', `agent ${agentId} does not exist`, { agent_id: agentId });
    return cell;
  }

  /** `cell` without a promise, for the hot path of an input: the loaded cell, or `undefined` (not loaded, or closing) to ask `cell`. */
  loadedCell(agentId: string): AgentCell | undefined {
    return this.closing ? undefined : this.cells.get(agentId);
  }

  /** The agent's committed document, for a read. */
  async doc(agentId: string): Promise<AgentDoc> {
    return (await this.cell(agentId)).doc;
  }

  /**
   * A mutation of a live (non-terminated) agent, serialized in its lane. With an Idempotency-Key
   * the lane first looks the key up in the agent's records: a retry of a request gets its recorded
   * answer (and `replayed`) and changes nothing; otherwise the key is recorded, with the answer, in
   * the commit that ends the operation — the one that makes its effect durable. Concurrent retries
   * queue in the same lane, so the later ones find the key; a process that dies before that commit
   * leaves neither effect nor key.
   */
  async mutate<T>(agentId: string, operation: (tx: Tx) => Promise<T>, options: MutateOptions<T> = {}): Promise<T> {
    return this.mutateCell(await this.cell(agentId), operation, options);
  }

  /** `mutate` on a cell already in hand (one that may have retired meanwhile: its lane reloads it). */
  mutateCell<T>(cell: AgentCell, operation: (tx: Tx) => Promise<T>, options: MutateOptions<T> = {}): Promise<T> {
    const agentId = cell.id;
    const claim = options.idempotency;
    // Not async: each layer of promises is paid by every accepted input (bench:events (a)).
    const result = cell.run((tx) => {
      const recorded = claim ? recordedAnswer(tx.doc, claim) : undefined;
      if (claim && recorded) {
        claim.replayed = true;
        return Promise.resolve(recorded.value as T);
      }
      if (!options.allowTerminated && tx.doc.state.phase === 'terminated') {
        throw new DomainError('agent_terminated', `agent ${agentId} is terminated`, { agent_id: agentId });
      }
      if (options.expected_version !== undefined && options.expected_version !== tx.doc.state.state_version) {
        throw new DomainError('version_conflict', `agent ${agentId} is at state_version ${tx.doc.state.state_version}`, {
          current_version: tx.doc.state.state_version,
          expected_version: options.expected_version,
        });
      }
      if (!claim) return operation(tx);
      return operation(tx).then((value) => {
        recordAnswer(tx.doc, claim, options.recordAs ? options.recordAs(value) : value, tx.now);
        tx.touch();
        return value;
      });
    }, options);
    if (!(options.kick ?? true)) return result;
    return result.then((value) => {
      this.deps.kick(agentId);
      return value;
    });
  }

  /**
   * A new agent: its cell holds `doc` at version 0 (nothing stored), so the first commit of
   * `operation` creates it (`version_conflict` if the id is taken); the cell joins the loaded ones
   * once that commit is durable.
   */
  async create<T>(agentId: string, doc: AgentDoc, operation: (tx: Tx) => Promise<T>): Promise<{ cell: AgentCell; result: T }> {
    await this.deps.take?.(agentId);
    const cell = new AgentCell(agentId, doc, 0, this.env);
    const result = await cell.run(operation);
    this.cells.set(agentId, cell);
    return { cell, result };
  }

  /** Loaded agents with a run whose last commit is older than `before` (epoch ms). */
  stalled(before: number): string[] {
    return [...this.cells.values()].filter((c) => c.doc.state.current_run_id && Date.parse(c.doc.last_commit_at) < before).map((c) => c.id);
  }

  /** Close: no more access; every lane settles, then every actor stops. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.cells.values()].map((cell) => cell.run(async () => undefined).catch(() => undefined)));
  }

  /**
   * Drops the agent's cell at once, whatever its lane holds (another node took the agent over):
   * the next access loads it again, and a commit still in the old lane is refused by its fence.
   */
  drop(agentId: string): void {
    const cell = this.cells.get(agentId);
    this.cells.delete(agentId);
    this.quiet.delete(agentId);
    cell?.passivate();
    this.deps.store.evictAgent(agentId);
  }

  /** The loaded agents' ids. */
  ids(): string[] {
    return [...this.cells.keys()];
  }

  passivateAll(): void {
    for (const cell of this.cells.values()) cell.passivate();
  }

  /** In a cluster, the lease first: the document read after it is the latest, and no other node writes it meanwhile. */
  private async takeAndLoad(agentId: string): Promise<AgentCell | null> {
    if (!this.deps.take) return this.loadFromStore(agentId);
    await this.deps.take(agentId);
    const cell = await this.loadFromStore(agentId);
    if (!cell) this.deps.untake?.(agentId);
    return cell;
  }

  private async loadFromStore(agentId: string): Promise<AgentCell | null> {
    const stored = await this.deps.store.loadAgent(agentId);
    if (!stored) {
      // Nothing to keep for an id that names no agent (a typo, a probe).
      this.deps.store.evictAgent(agentId);
      return null;
    }
    const cell = new AgentCell(agentId, parseDoc(stored.doc), stored.version, this.env);
    cell.rosterJson = this.deps.roster.json(agentId);
    // An entry an older version wrote may lack what this one derives (stranded waits): the
    // resident roster takes the fresh one now, the store with the agent's next commit.
    const fresh = rosterOf(cell.doc);
    if (JSON.stringify(fresh) !== cell.rosterJson) this.deps.roster.set(agentId, fresh);
    this.cells.set(agentId, cell);
    this.deps.loaded(cell);
    // Loaded for a read only, a quiet agent goes again once the reader is done.
    this.noteSettled(agentId);
    return cell;
  }

  private noteSettled(agentId: string): void {
    this.quiet.delete(agentId);
    this.quiet.add(agentId);
    for (const oldest of this.quiet) {
      if (this.quiet.size <= this.deps.residentQuietAgents) break;
      this.quiet.delete(oldest);
      this.retirements.ask(oldest);
    }
  }

  /**
   * A passivated agent that needs no recovery (asleep with nothing to do, stopped, terminated)
   * holds no memory: its cell leaves `cells` once its lane has drained, and the store releases
   * what it holds open for it (`evictAgent`). Its roster entry, armed timers and trigger hashes
   * stay; the next access reloads it.
   */
  private async retire(agentId: string): Promise<void> {
    const cell = this.cells.get(agentId);
    if (!cell || this.closing) return;
    await cell.retire(
      (c) => c.actor === null && !needsRecovery(c.doc),
      () => {
        if (this.cells.get(agentId) === cell) this.cells.delete(agentId);
        this.deps.retired(cell);
        this.deps.store.evictAgent(agentId);
      },
    );
  }
}
