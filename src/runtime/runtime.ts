import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { agentMachine, continuationMachine, hasId, supervisorMachine, taskMachine } from '../../machines/index.js';
import {
  decideForMessage,
  deriveClosure,
  isActiveWait,
  isTerminalTask,
  resolveContinuation,
  wakeHintDisposition,
  workSignal,
} from '../../machines/contracts/index.js';
import {
  AbortRunRequest,
  ClaimTurnRequest,
  CompleteTurnRequest,
  CompleteWorkItemRequest,
  ControlRequest,
  CreateAgentRequest,
  CreateTimerRequest,
  CreateTriggerRequest,
  CreateWaitRequest,
  CreateWorkItemRequest,
  DomainError,
  EnqueueRequest,
  EventsQuery,
  ExecCommandRequest,
  HeartbeatTurnRequest,
  InvokeAgentRequest,
  AgentListQuery,
  PickWorkItemRequest,
  PromptRequest,
  TaskInputRequest,
  TaskOutputQuery,
  TransitionRequest,
  UpdateWorkItemRequest,
  WAIT_KIND_OF_WAKE,
  WakeRequest,
  type StateAccepts,
  type ActorNodeShape,
  type AgentAccepts,
  type AgentEvent,
  type AgentListEntry,
  type AgentStateView,
  type AgentSummary,
  type CallbackResult,
  type EventsPage,
  type ExternalTriggerRecord,
  type ExternalTriggerSummary,
  type MessageEnvelope,
  type Readiness,
  type Snapshot,
  type TaskInputResult,
  type TaskOutputResult,
  type TaskRecord,
  type TaskStopResult,
  type TimerRecord,
  type TransitionRecord,
  type TriggerCapability,
  type TurnAction,
  type TurnClaim,
  type TurnOffer,
  type TurnResult,
  type WaitConditionRecord,
  type WakeResult,
  type WorkItemView,
  type MessageAccepted,
  type DeliveryMode,
} from '../domain/index.js';
import type { Lease, Store } from '../store/store.js';
import { createStore } from '../store/index.js';
import { addSnapshot, appendRecord, closingRef, findTransition, type AgentDoc } from './agent/agent-doc.js';
import { AgentCell, parseDoc, type CellEnv, type EffectRequest, type RunOptions } from './agent/agent-cell.js';
import { statePath, type Tx } from './agent/tx.js';
import type { CallbackBody, IdempotencyReceipt, MutationOptions, Page, RuntimeApi } from './api.js';
import { recordAnswer, recordedAnswer } from './agent/idempotency-ledger.js';
import { KeyedQueue } from './keyed-queue.js';
import { hashToken, mintToken, tokenMatches } from './capability.js';
import { newId, systemClock, type Clock } from './clock.js';
import { EventBus } from './host/event-bus.js';
import { factsOf } from './agent/facts.js';
import { admitMessage, headOfQueue, pendingCount, triggerOf, type NewMessage } from './agent/messages.js';
import { signalGroup, startCommand, waitForOutput, type CommandHandle, type CommandResult } from './process/index.js';
import { ScriptedRunner } from './runners/scripted-runner.js';
import { Soon, SoonBatches } from './soon.js';
import { persistOnce } from './persist-once.js';
import { SharedOperations } from './shared-operations.js';
import { buildSnapshot, migrateSnapshot, verifySnapshot } from './records/snapshots.js';
import { assembleSummary, statechartOf, triggerSummary, workItemView } from './records/views.js';
import { TimerAlarms } from './host/alarms.js';
import { AgentRoster, needsRecovery, rosterOf } from './agent/roster.js';
import { ResidentRoster } from './host/resident-roster.js';
import type { TurnRunner } from './runners/turn-runner.js';
import { TurnOffers } from './host/turn-offers.js';
import { reasonChain } from './reason-chain.js';
import { cancelOwnedWaits, endWait, resolveWaitsFor, taskEnded } from './records/waits.js';
import { InspectionHub, type InspectionListener } from './host/inspection-hub.js';
import { agentAccepts } from './agent/accepted-events.js';
import { stillHoldsLease } from './host/lease-check.js';
import { acceptsOf, refusedByState, transitionEvent } from './agent/accepts.js';

/** Options of {@link Runtime.open}; every option has a default. */
export interface RuntimeOptions {
  /**
   * Data directory of the embedded lowdb store (ignored when `store` is given).
   * @default './data'
   * @example '/var/lib/holon-xstate'
   */
  dataDir?: string;
  /**
   * The store to use instead of lowdb on `dataDir`.
   * @default a LowdbStore on dataDir
   * @example new MemoryStore()
   */
  store?: Store;
  /**
   * This process's name as lease holder and in `/handshake`.
   * @default `node-<pid>`
   * @example 'node-a'
   */
  nodeId?: string;
  /**
   * The runtime's only clock.
   * @default the system clock
   */
  clock?: Clock;
  /**
   * Runs the turns of agents whose `config.turn_runner` is `scripted`.
   * @default new ScriptedRunner()
   */
  runner?: TurnRunner;
  /**
   * Write-lease time to live; it is renewed every third of it.
   * @default 10_000
   * @example 3_000
   */
  leaseTtlMs?: number;
  /**
   * How long `open` keeps trying to take a lease held by someone else. A process restarted after
   * a crash finds its predecessor's lease still unexpired; waiting one TTL lets it take over.
   * @default 0 (fail at once with `lease_lost`)
   * @example 12_000
   */
  leaseWaitMs?: number;
  /**
   * Told once when `open` finds the lease held by someone else and starts waiting for it
   * (`leaseWaitMs` > 0), with how long it will wait and the store's reason (holder, expiry).
   * @default none
   */
  onLeaseWait?: (wait: { wait_ms: number; reason: string }) => void;
  /**
   * Grace between SIGTERM and SIGKILL when a command task is stopped.
   * @default 2_000
   */
  killGraceMs?: number;
  /**
   * Command processes one agent may run at once: a command task beyond it stays `queued` (visible
   * as such, and `TaskOutput(block=true)` waits on it) and starts, in creation order, when one ends.
   * @default 128
   * @example maxRunningTasks: 4
   */
  maxRunningTasks?: number;
  /**
   * How long an HTTP turn worker may hold a turn without a heartbeat.
   * @default 30_000
   */
  turnLeaseMs?: number;
  /**
   * Live agents per supervisor shard (one parent for every agent is quadratic in its children):
   * a full shard's hasCapacity guard refuses the next agent, which goes to another shard.
   * @default 1_000
   * @example shardCapacity: 256
   */
  shardCapacity?: number;
  /**
   * How many quiet agents (asleep with nothing to do, or terminated) stay loaded: the least recently
   * settled beyond this number retire (their cell is dropped and the store releases what it holds
   * open for them; they reload on their next access). A burst of work for the same agents then does not reload them each time,
   * while memory stays bounded however many agents exist. `0` retires each one as soon as it settles.
   * @default 1_000
   * @example residentQuietAgents: 0 // keep nothing quiet in memory
   */
  residentQuietAgents?: number;
  /**
   * How long a lifecycle side effect (initialize, wake, terminate ...) may take before it counts
   * as failed and the transition goes to Recovering.
   * @default 10_000
   */
  effectTimeoutMs?: number;
  /**
   * Fault injection, for tests and operators' chaos drills: makes a lifecycle side effect fail as
   * a real failure would. Each hook is asked every time its effect runs, before the effect changes
   * anything; a fault makes the effect log `side_effects_failed` and answer the machine with
   * `*.FAILED` instead of `*.DONE`, so the TransitionRecord and `failure` carry the fault's reason
   * (`recoverable` is read by `initialize` only: true goes to Recovering, false back to Created).
   * @default none (no effect fails on purpose)
   * @example { sleep: (agentId) => (agentId === 'agent-7' ? { reason: 'disk full' } : null) }
   */
  faults?: Partial<Record<'initialize' | 'sleep' | 'evolve' | 'recover', (agentId: string) => EffectFault | null>>;
  /**
   * Receives every XState inspection event of the agent actors and their children, e.g. to record
   * them as JSONL for offline replay (`holon-xstate serve --inspect-log <file>`).
   * @default none (inspection costs ~40% of actor throughput)
   * @example (event) => log.write(JSON.stringify(event) + '\n')
   */
  inspect?: (event: InspectionEvent) => void;
}

/** How `mutate` runs an operation. */
type MutateOptions<T> = MutationOptions &
  RunOptions & {
    /** The operation also applies to a terminated agent. */
    allowTerminated?: boolean;
    /** What the idempotency record keeps of the answer (default: all of it); never a capability token. */
    recordAs?: (value: T) => unknown;
  };

/** An injected effect failure (RuntimeOptions.faults). */
export interface EffectFault {
  reason: string;
  recoverable?: boolean;
}

type Shard = Actor<typeof supervisorMachine>;

/** An ExecCommand request waiting for the operation it joined. */
interface CommandRequest {
  req: ExecCommandRequest;
  resolve: (task: TaskRecord) => void;
  reject: (error: unknown) => void;
  idempotency?: IdempotencyReceipt;
}

interface LiveTask {
  handle: CommandHandle;
}

/** A command that ended, waiting to be recorded. */
interface FinishedCommand {
  taskId: string;
  handle: CommandHandle;
  result: CommandResult;
}

/** One callback delivery through a trigger, recorded on the trigger. */
interface Delivery {
  triggerId: string;
  deliveryId: string;
}

/** The `dueAgents` alarm key of an agent (one per agent). */
const DUE_AGENT = 'next-timer';
const MAX_ACTOR_RECOVERIES = 3;

/**
 * The runtime host: boots the supervisor actors, restores persisted agents, runs one scheduler
 * lane per agent and performs every side effect the machines request.
 */
export class Runtime implements RuntimeApi {
  readonly nodeId: string;
  readonly startedAt: Date;
  private readonly cells = new Map<string, AgentCell>();
  private readonly loading = new Map<string, Promise<AgentCell | null>>();
  private readonly bus = new EventBus();
  private readonly shards: Shard[] = [];
  private readonly live = new Map<string, LiveTask>();
  /** Scheduler steps asked for, one per agent per turn of the event loop. */
  private readonly steps = new Soon((agentId) => this.step(agentId));
  private readonly alarms: TimerAlarms;
  /** Boot arms one alarm per never-loaded agent with a timer: at its due time it loads the agent, whose load arms its timers. */
  private readonly dueAgents: TimerAlarms;
  private readonly roster = new ResidentRoster();
  /** Agents whose cell is checked for retirement on the next turn of the event loop. */
  private readonly retirements = new Soon((agentId) => this.retire(agentId));
  /** Tasks whose creation is durable, to launch: one operation per agent launches every task added by then. */
  private readonly launches = new SoonBatches<string>((agentId, take) => this.launchTasks(agentId, take));
  /** Commands that ended, to record: one operation per agent records every result added by then. */
  private readonly results = new SoonBatches<FinishedCommand>((agentId, take) => this.recordResults(agentId, take));
  /** ExecCommand requests to one agent arriving together share one operation. */
  private readonly commandRequests = new SharedOperations<CommandRequest>((agentId, take) => this.recordCommands(agentId, take));
  private readonly offers: TurnOffers;
  private readonly runs = new Map<string, AbortController>();
  /** Creates that carry an Idempotency-Key, one at a time per key. */
  private readonly createKeys = new KeyedQueue();
  private lease: Lease | null = null;
  private leaseLost = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private closing = false;
  private lastCommitAt: string | null = null;
  private readonly env: CellEnv;
  /** Live inspection of the agents someone watches (`inspect`); nothing for the others. */
  private readonly inspection: InspectionHub;

  private constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly runner: TurnRunner,
    private readonly options: Required<Pick<RuntimeOptions, 'leaseTtlMs' | 'killGraceMs' | 'maxRunningTasks' | 'turnLeaseMs' | 'shardCapacity' | 'residentQuietAgents' | 'effectTimeoutMs'>> & { dataDir: string; inspect?: RuntimeOptions['inspect']; faults?: RuntimeOptions['faults'] },
    nodeId: string,
  ) {
    this.nodeId = nodeId;
    this.startedAt = clock.now();
    this.alarms = new TimerAlarms((agentId, timerId, dueAt) => void this.fireTimer(agentId, timerId, dueAt).catch(() => undefined), () => this.clock.now());
    this.dueAgents = new TimerAlarms((agentId) => void this.loadCell(agentId).catch(() => undefined), () => this.clock.now());
    this.offers = new TurnOffers(() => this.clock.now());
    this.inspection = new InspectionHub((agentId) => this.cells.get(agentId)?.actor ?? null, () => this.clock.now().getTime());
    this.env = {
      store,
      clock,
      bus: this.bus,
      // Only the children persist once: the agent's own snapshot changes with nearly every commit.
      logic: agentMachine.provide({ actors: { task: persistOnce(taskMachine), continuation: persistOnce(continuationMachine) } }),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      fencingToken: () => this.fencingToken(),
      attached: (agentId, actor) => {
        this.inspection.attached(agentId, actor);
        const shard = this.attachToShard(agentId);
        actor.subscribe({ error: (error) => shard.send({ type: 'AGENT.FAILED', agentId, error: error instanceof Error ? error.message : String(error) }) });
      },
      detached: (agentId) => {
        this.inspection.detached(agentId);
        this.shardOf.get(agentId)?.send({ type: 'AGENT.DETACHED', agentId });
        this.shardOf.delete(agentId);
      },
      onCommitted: (cell, roster, rosterJson) => {
        this.lastCommitAt = this.clock.now().toISOString();
        if (roster) this.roster.set(cell.id, roster, rosterJson);
      },
      settled: (cell) => this.retireSoon(cell.id),
      reload: (agentId) => this.cell(agentId),
      commitFailed: (error) => {
        if (error instanceof DomainError && error.code === 'lease_lost') this.onLeaseLost();
      },
    };
  }

  static async open(options: RuntimeOptions = {}): Promise<Runtime> {
    const dataDir = options.dataDir ?? './data';
    const store = options.store ?? createStore({ kind: 'lowdb', dataDir });
    const runtime = new Runtime(
      store,
      options.clock ?? systemClock,
      options.runner ?? new ScriptedRunner(),
      {
        dataDir: store.kind === 'lowdb' ? store.location : dataDir,
        leaseTtlMs: options.leaseTtlMs ?? 10_000,
        killGraceMs: options.killGraceMs ?? 2_000,
        maxRunningTasks: options.maxRunningTasks ?? 128,
        turnLeaseMs: options.turnLeaseMs ?? 30_000,
        shardCapacity: options.shardCapacity ?? 1_000,
        residentQuietAgents: options.residentQuietAgents ?? 1_000,
        effectTimeoutMs: options.effectTimeoutMs ?? 10_000,
        ...(options.inspect ? { inspect: options.inspect } : {}),
        ...(options.faults ? { faults: options.faults } : {}),
      },
      options.nodeId ?? `node-${process.pid}`,
    );
    await store.open();
    const deadline = Date.now() + (options.leaseWaitMs ?? 0);
    let toldWaiting = false;
    for (;;) {
      try {
        runtime.lease = await store.acquireLease(runtime.nodeId, runtime.options.leaseTtlMs, runtime.clock.now());
        break;
      } catch (error) {
        const waiting = error instanceof DomainError && error.code === 'lease_lost' && Date.now() < deadline;
        if (!waiting) {
          await store.close();
          throw error;
        }
        if (!toldWaiting) options.onLeaseWait?.({ wait_ms: options.leaseWaitMs ?? 0, reason: error.message });
        toldWaiting = true;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    runtime.startHeartbeat();
    await runtime.recoverAll();
    return runtime;
  }

  get storeKind(): string {
    return this.store.kind;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  // ---------------------------------------------------------------- lease

  private fencingToken(): number {
    if (this.leaseLost || !this.lease) throw new DomainError('lease_lost', 'this runtime no longer holds the write lease');
    return this.lease.fencing_token;
  }

  private startHeartbeat(): void {
    const every = Math.max(50, Math.floor(this.options.leaseTtlMs / 3));
    this.heartbeat = setInterval(() => void this.renewLease(), every);
    this.heartbeat.unref();
  }

  private async renewLease(): Promise<void> {
    if (!this.lease || this.leaseLost) return;
    try {
      this.lease = await this.store.renewLease(this.lease, this.options.leaseTtlMs, this.clock.now());
    } catch {
      this.onLeaseLost();
    }
  }

  /** Seed 002: once renewal fails, no more external side effects from this instance. */
  private onLeaseLost(): void {
    if (this.leaseLost) return;
    this.leaseLost = true;
    this.alarms.disarmAll();
    this.dueAgents.disarmAll();
    for (const controller of this.runs.values()) controller.abort();
    for (const task of this.live.values()) void task.handle.stop().catch(() => undefined);
  }

  // ---------------------------------------------------------------- supervisors

  private readonly shardOf = new Map<string, Shard>();

  /**
   * Attaches a live agent actor to a shard: the one it was on, else the newest first; the shard's
   * hasCapacity guard decides whether it takes the agent, and when none does a new shard opens.
   */
  private attachToShard(agentId: string): Shard {
    const known = this.shardOf.get(agentId);
    if (known && this.tryAttach(known, agentId)) return known;
    for (let i = this.shards.length - 1; i >= 0; i--) {
      const shard = this.shards[i] as Shard;
      if (shard !== known && this.tryAttach(shard, agentId)) return shard;
    }
    const shard = createActor(supervisorMachine, { input: { shardId: this.shards.length, capacity: this.options.shardCapacity } });
    shard.subscribe({ error: () => undefined });
    shard.on('agent.failed', (event) => void this.onAgentFailed(event.agentId, event.error));
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

  /** A child actor threw: restore it from the last commit and send it to Recovering. */
  /** Actor failures per agent in this process: recovery is retried a few times, then given up. */
  private readonly actorFailures = new Map<string, number>();

  private async onAgentFailed(agentId: string, error: string): Promise<void> {
    const cell = this.cells.get(agentId);
    if (!cell) return;
    cell.actor = null;
    const failures = (this.actorFailures.get(agentId) ?? 0) + 1;
    this.actorFailures.set(agentId, failures);
    if (failures > MAX_ACTOR_RECOVERIES) {
      // The actor cannot even run its recovery (e.g. a corrupted machine snapshot): it stays
      // passivated with the failure on record, for an operator, instead of failing forever.
      await cell.run(async (tx) => {
        tx.doc.runtime_error = true;
        tx.doc.failure = { phase: 'actor', reason: `actor failed ${failures} times; last: ${error}` };
        tx.emit('transition_phase', { transition_id: null, phase: 'recovery_abandoned', detail: error });
      }).catch(() => undefined);
      return;
    }
    await cell
      .run(async (tx) => {
        tx.send({ type: 'RECOVER', reason: `actor failed: ${error}` }, { reason: `actor failed: ${error}`, trigger: 'recovery' });
        await this.drainEffects(tx);
      })
      .catch(() => undefined);
  }

  // ---------------------------------------------------------------- cells

  private async loadCell(agentId: string): Promise<AgentCell | null> {
    const cached = this.cells.get(agentId);
    if (cached) return cached;
    let pending = this.loading.get(agentId);
    if (!pending) {
      pending = (async () => {
        const stored = await this.store.loadAgent(agentId);
        if (!stored) {
          // Nothing to keep for an id that names no agent (a typo, a probe).
          this.store.evictAgent(agentId);
          return null;
        }
        const cell = new AgentCell(agentId, parseDoc(stored.doc), stored.version, this.env);
        cell.rosterJson = this.roster.json(agentId);
        // An entry an older version wrote may lack what this one derives (stranded waits): the
        // resident roster takes the fresh one now, the store with the agent's next commit.
        const fresh = rosterOf(cell.doc);
        if (JSON.stringify(fresh) !== cell.rosterJson) this.roster.set(agentId, fresh);
        this.cells.set(agentId, cell);
        this.dueAgents.disarm(agentId, DUE_AGENT);
        this.armTimers(cell.doc);
        // Loaded for a read only, a quiet agent goes again once the reader is done.
        this.retireSoon(agentId);
        return cell;
      })().finally(() => this.loading.delete(agentId));
      this.loading.set(agentId, pending);
    }
    return pending;
  }

  private async cell(agentId: string): Promise<AgentCell> {
    if (this.closing) throw new DomainError('runtime_shutting_down', 'the runtime is shutting down');
    const cell = await this.loadCell(agentId);
    if (!cell) throw new DomainError('agent_not_found', `agent ${agentId} does not exist`, { agent_id: agentId });
    return cell;
  }

  /**
   * A mutation of a live (non-terminated) agent, serialized in its lane. With an Idempotency-Key
   * the lane first looks the key up in the agent's records: a retry of a request gets its recorded
   * answer (and `replayed`) and changes nothing; otherwise the key is recorded, with the answer, in
   * the commit that ends the operation — the one that makes its effect durable. Concurrent retries
   * queue in the same lane, so the later ones find the key; a process that dies before that commit
   * leaves neither effect nor key.
   */
  private async mutate<T>(agentId: string, operation: (tx: Tx) => Promise<T>, options: MutateOptions<T> = {}): Promise<T> {
    const cell = await this.cell(agentId);
    const claim = options.idempotency;
    const result = await cell.run(async (tx) => {
      const recorded = claim ? recordedAnswer(tx.doc, claim) : undefined;
      if (claim && recorded) {
        claim.replayed = true;
        return recorded.value as T;
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
      const value = await operation(tx);
      if (claim) {
        recordAnswer(tx.doc, claim, options.recordAs ? options.recordAs(value) : value, tx.now);
        tx.touch();
      }
      return value;
    }, options);
    this.kick(agentId);
    return result;
  }

  /** Settled cells, least recently settled first; the ones beyond `residentQuietAgents` retire. */
  private readonly quiet = new Set<string>();

  private retireSoon(agentId: string): void {
    this.quiet.delete(agentId);
    this.quiet.add(agentId);
    for (const oldest of this.quiet) {
      if (this.quiet.size <= this.options.residentQuietAgents) break;
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
        this.shardOf.delete(agentId);
        this.store.evictAgent(agentId);
      },
    );
  }

  // ---------------------------------------------------------------- recovery at boot

  /**
   * Boot reads the roster, not the documents: it indexes every agent's trigger hashes, arms an
   * alarm at each agent's next timer, and loads and recovers only the agents whose entry says
   * they need it. Agents written before rosters existed (entry `null`) are recovered from their
   * document, and that recovery commits their first entry.
   */
  private async recoverAll(): Promise<void> {
    const boot: string[] = [];
    const unlisted = new Set<string>();
    for (const { agent_id: agentId, roster } of await this.store.listRoster()) {
      const entry = AgentRoster.safeParse(roster);
      if (!entry.success) {
        unlisted.add(agentId);
        boot.push(agentId);
        continue;
      }
      this.roster.set(agentId, entry.data);
      if (entry.data.needs_recovery) boot.push(agentId);
      else {
        // Quiet: nothing of it stays open in the store (recovery may have appended to its segments).
        this.store.evictAgent(agentId);
        if (entry.data.next_timer_at) this.dueAgents.arm(agentId, DUE_AGENT, entry.data.next_timer_at);
      }
    }
    for (const agentId of boot) {
      const cell = await this.loadCell(agentId);
      if (!cell) continue;
      await cell.run(async (tx) => {
        await this.recoverAgent(tx);
        if (unlisted.has(agentId)) tx.touch();
      });
      this.kick(agentId);
    }
  }

  /** Bootstrap recovery of one agent after a restart (holon-reference §2.1, §9.2, §12). */
  private async recoverAgent(tx: Tx): Promise<void> {
    const doc = tx.doc;
    const now = tx.now.toISOString();
    // Effects left in doubt are never silently re-run: a started command becomes interrupted.
    for (const effect of doc.effects) {
      if (effect.status !== 'started') continue;
      if (effect.kind === 'emit_parent_result') {
        // Idempotent on the receiving side (a terminal task ignores it), so it is simply sent again.
        const detail = effect.detail as { parent_agent_id: string; task_id: string; failed: boolean; text: string };
        tx.onCommit(() => void this.deliverInvocationResult(tx.cell.id, { agent_id: detail.parent_agent_id, task_id: detail.task_id }, detail.failed, detail.text, effect.idempotency_key).catch(() => undefined));
        continue;
      }
      effect.status = 'in_doubt_resolved';
      effect.finished_at = now;
      effect.detail = { ...effect.detail, resolution: effect.kind === 'start_command' ? 'task_interrupted' : 'reconciled_on_recovery' };
      tx.emit('effect_recorded', { ...effect });
    }
    for (const task of doc.tasks) {
      if (isTerminalTask(task.status)) continue;
      // A detached command outlives a killed runtime: end its process group before marking it.
      const pid = doc.effects.find((e) => e.idempotency_key === `start_command:${task.id}`)?.detail['pid'];
      if (typeof pid === 'number') signalGroup(pid, 'SIGKILL');
      this.finishTaskRecord(tx, task, { status: 'interrupted', exit_code: null, reason: 'runtime_restarted' });
    }
    if (doc.state.current_run_id) {
      const runId = doc.state.current_run_id;
      for (const message of doc.queue) if (message.run_id === runId && message.status === 'dequeued') message.status = 'interrupted';
      doc.last_turn_terminal = 'aborted';
      doc.state.current_run_id = null;
      tx.send({ type: 'TURN.FINISHED', runId, facts: factsOf(doc) }, { reason: 'runtime restarted during the turn', trigger: 'recovery' });
      tx.emit('turn_finished', { run_id: runId, terminal: 'aborted', reason: 'runtime_restarted' });
    }
    // A transitional state left by a crash: its protocol is still open, so its (idempotent)
    // effect runs again and the transition commits from where the log says it stopped.
    const phase = doc.state.phase;
    if (['initializing', 'waking', 'recovering', 'terminating', 'evolving'].includes(phase)) {
      tx.cell.ensureActor();
      const effects: Partial<Record<string, EffectRequest['effect']>> = { initializing: 'initialize', waking: 'wake', recovering: 'recover', terminating: 'terminate', evolving: 'evolve' };
      const effect = effects[phase] as EffectRequest['effect'];
      tx.emit('transition_phase', { transition_id: doc.pending_transition?.transition_id ?? null, phase: 'resumed_on_recovery', detail: phase });
      await this.performEffect(tx, { type: 'effect.requested', effect, key: `${tx.cell.id}:${effect}:recovery` });
      await this.drainEffects(tx);
    }
    // A quiet agent (asleep, stopped, terminated) commits nothing at boot.
    if (!tx.dirty) tx.passivate();
  }

  private armTimers(doc: AgentDoc): void {
    for (const timer of doc.timers) {
      if (timer.status === 'active' && timer.next_fire_at) this.alarms.arm(doc.identity.agent_id, timer.id, timer.next_fire_at);
    }
  }

  // ---------------------------------------------------------------- effects

  /** Performs every effect the machine requested during this operation, answering each with its event. */
  private async drainEffects(tx: Tx): Promise<void> {
    for (let round = 0; round < 16; round++) {
      const effects = tx.cell.takeEffects();
      if (effects.length === 0) return;
      for (const effect of effects) await this.performEffect(tx, effect);
    }
  }

  private async performEffect(tx: Tx, effect: EffectRequest): Promise<void> {
    const phase = (name: 'transition_prepared' | 'side_effects_applied', detail?: string) => tx.logPhase(name, detail ?? effect.key);
    switch (effect.effect) {
      case 'initialize': {
        phase('transition_prepared');
        const fault = this.injectedFault(tx, 'initialize');
        if (fault) {
          tx.send({ type: 'INITIALIZE.FAILED', reason: fault.reason, recoverable: fault.recoverable ?? false }, { reason: fault.reason, trigger: 'system' });
          return;
        }
        this.provisionDefaultTrigger(tx);
        this.takeSnapshotInto(tx, 'initial');
        phase('side_effects_applied');
        await tx.flush();
        tx.send({ type: 'INITIALIZE.DONE' }, { reason: 'initialization complete', trigger: 'system' });
        return;
      }
      case 'sleep': {
        phase('transition_prepared');
        const fault = this.injectedFault(tx, 'sleep');
        if (fault) {
          tx.send({ type: 'SLEEP.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'system' });
          return;
        }
        // Back to sleep after a refused wake: the incompatible snapshot stays the recovery point
        // until it is migrated; a fresh one would hide the refusal.
        if (!tx.doc.refusal) this.takeSnapshotInto(tx, 'pre_sleep');
        phase('side_effects_applied');
        tx.doc.state.sleeping_until = null;
        return;
      }
      case 'wake': {
        phase('transition_prepared');
        const latest = tx.doc.snapshots.at(-1);
        const verdict = latest ? verifySnapshot(latest, tx.cell.id, tx.doc.identity.identity_version) : null;
        if (!verdict) {
          tx.send({ type: 'WAKE.FAILED', reason: 'no recovery point' }, { reason: 'no snapshot to wake from', trigger: 'system' });
        } else if (verdict.ok) {
          phase('side_effects_applied', `verified ${verdict.snapshot.snapshot_id}`);
          tx.doc.refusal = null;
          tx.send({ type: 'WAKE.DONE' }, { reason: 'snapshot verified', trigger: 'system', evidence_refs: [`snapshot:${verdict.snapshot.snapshot_id}`] });
        } else if (verdict.kind === 'incompatible') {
          tx.doc.refusal = { reason: verdict.reason, hint: verdict.hint };
          tx.send({ type: 'WAKE.REFUSED', reason: verdict.reason, hint: verdict.hint }, { reason: verdict.reason, trigger: 'system' });
        } else {
          tx.send({ type: 'WAKE.FAILED', reason: verdict.reason }, { reason: verdict.reason, trigger: 'system' });
        }
        return;
      }
      case 'recover': {
        // A termination that failed half-way is isolated, not undone: it waits in Recovering, with
        // the failed phase recorded, for an operator to retry the termination (seed 002 scenario 5).
        const pending = tx.doc.pending_transition;
        if (pending?.from_phase === 'terminating') {
          tx.emit('transition_phase', { transition_id: pending.transition_id, phase: 'isolated_for_operator', detail: tx.doc.failure?.reason ?? 'termination failed' });
          return;
        }
        phase('transition_prepared');
        const fault = this.injectedFault(tx, 'recover');
        if (fault) {
          tx.send({ type: 'RECOVER.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'recovery' });
          return;
        }
        // Recovery ends on a fresh, verified recovery point built from committed records only.
        const snapshot = this.takeSnapshotInto(tx, 'recovery');
        const verdict = verifySnapshot(snapshot, tx.cell.id, tx.doc.identity.identity_version);
        if (verdict.ok) {
          phase('side_effects_applied');
          tx.send({ type: 'RECOVER.DONE', snapshotId: snapshot.snapshot_id }, { reason: 'recovered to a verified snapshot', trigger: 'recovery', evidence_refs: [`snapshot:${snapshot.snapshot_id}`] });
        } else {
          tx.send({ type: 'RECOVER.FAILED', reason: verdict.reason }, { reason: verdict.reason, trigger: 'recovery' });
        }
        return;
      }
      case 'evolve': {
        phase('transition_prepared');
        const fault = this.injectedFault(tx, 'evolve');
        if (fault) {
          tx.send({ type: 'EVOLVE.FAILED', reason: fault.reason }, { reason: fault.reason, trigger: 'system' });
          return;
        }
        phase('side_effects_applied');
        tx.send({ type: 'EVOLVE.DONE', accepted: true }, { reason: 'candidate change evaluated', trigger: 'system' });
        return;
      }
      case 'stop': {
        await this.stopEffects(tx, 'agent_stopped');
        return;
      }
      case 'terminate': {
        phase('transition_prepared');
        try {
          await this.stopEffects(tx, 'agent_terminated', true);
          for (const timer of tx.doc.timers) if (timer.status === 'active') this.cancelTimerRecord(tx, timer);
          this.takeSnapshotInto(tx, 'archive');
          phase('side_effects_applied');
          tx.send({ type: 'TERMINATE.DONE' }, { reason: 'termination committed', trigger: 'system' });
        } catch (error) {
          const reason = error instanceof Error ? error.message : String(error);
          tx.emit('transition_phase', { transition_id: tx.doc.pending_transition?.transition_id ?? null, phase: 'side_effects_failed', detail: reason });
          tx.send({ type: 'TERMINATE.FAILED', phase: 'side_effects_applied', reason }, { reason, trigger: 'system' });
        }
        return;
      }
    }
  }

  /** The fault RuntimeOptions.faults injects into this run of `effect`, logged as a failed side effect. */
  private injectedFault(tx: Tx, effect: keyof NonNullable<RuntimeOptions['faults']>): EffectFault | null {
    const fault = this.options.faults?.[effect]?.(tx.cell.id) ?? null;
    if (fault) tx.emit('transition_phase', { transition_id: tx.doc.pending_transition?.transition_id ?? null, phase: 'side_effects_failed', detail: fault.reason });
    return fault;
  }

  private async withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} side effect timed out after ${this.options.effectTimeoutMs} ms`)), this.options.effectTimeoutMs);
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the processes of the agent's live tasks (SIGTERM, grace, SIGKILL of each group). */
  private async stopProcesses(tx: Tx): Promise<void> {
    const handles = tx.doc.tasks.filter((t) => !isTerminalTask(t.status)).map((t) => this.live.get(t.id)?.handle);
    await Promise.all(handles.map((handle) => handle?.stop().catch(() => undefined)));
  }

  /**
   * Stop / terminate: abort the run, interrupt tasks, revoke triggers; the queue is kept. The
   * records change only once the processes are gone, so a stop that times out changes nothing.
   */
  private async stopEffects(tx: Tx, reason: string, timeout = false): Promise<void> {
    await (timeout ? this.withTimeout(this.stopProcesses(tx), 'stopping the task processes') : this.stopProcesses(tx));
    const runId = tx.doc.state.current_run_id;
    if (runId) {
      this.runs.get(runId)?.abort();
      this.offers.cancel(runId);
      for (const message of tx.doc.queue) if (message.run_id === runId && message.status === 'dequeued') message.status = 'aborted';
      tx.doc.state.current_run_id = null;
      tx.doc.last_turn_terminal = 'aborted';
      tx.emit('current_run_aborted', { run_id: runId, reason });
    }
    for (const task of tx.doc.tasks) {
      if (isTerminalTask(task.status)) continue;
      this.live.delete(task.id);
      // No result re-enters a stopped agent (holon-reference §9): the waits on the task end with it.
      this.finishTaskRecord(tx, task, { status: 'interrupted', exit_code: null, reason }, { enqueueResult: false });
    }
    for (const trigger of tx.doc.triggers) if (trigger.status === 'active') this.revokeTriggerRecord(tx, trigger);
    tx.doc.pending_wake_hint = null;
    tx.doc.state.pending = pendingCount(tx.doc);
  }

  private takeSnapshotInto(tx: Tx, kind: Snapshot['kind']): Snapshot {
    tx.syncMachine();
    const snapshot = buildSnapshot(tx.doc, kind, { fencingToken: this.fencingToken(), holder: this.nodeId, now: tx.now });
    addSnapshot(tx.doc, snapshot);
    tx.emit('snapshot_taken', { snapshot_id: snapshot.snapshot_id, kind, checksum: snapshot.recovery.checksum });
    return snapshot;
  }

  // ---------------------------------------------------------------- scheduler lane

  /** Asks the agent's scheduler to look at it again, after the operations already queued. */
  kick(agentId: string): void {
    if (this.closing || this.leaseLost) return;
    this.steps.ask(agentId);
  }

  private async step(agentId: string): Promise<void> {
    const cell = this.cells.get(agentId);
    if (!cell || this.closing) return;
    const again = await cell.run(async (tx) => this.schedule(tx));
    if (again) this.kick(agentId);
  }

  /** One scheduler decision (holon-reference §6.5); returns whether to look again. */
  private async schedule(tx: Tx): Promise<boolean> {
    const doc = tx.doc;
    if (!['active', 'sleeping'].includes(doc.state.phase)) return false;
    if (doc.state.status === 'stopped') {
      // Stopped, like asleep, holds no compute once nothing is in flight: the actor goes, its
      // snapshot stays (Start, or a task's end, rehydrates it).
      if (!needsRecovery(doc)) tx.passivate();
      return false;
    }
    if (doc.state.current_run_id) return false;
    const head = headOfQueue(doc);
    if (doc.state.phase === 'sleeping') {
      // Nothing to wake for, or a wake refused until the agent is migrated: asleep holds no actor.
      if ((!head && !doc.pending_wake_hint) || doc.refusal) {
        tx.passivate();
        return false;
      }
      tx.send({ type: 'WAKE', reason: head ? `message ${head.id} queued` : 'wake hint pending' }, { reason: 'work arrived while asleep', trigger: 'system' });
      await this.drainEffects(tx);
      // A refused wake is back asleep at once: no actor is left live for it.
      if (tx.doc.state.phase === 'sleeping') tx.passivate();
      return true;
    }
    if (head) {
      await this.claim(tx, head);
      return false;
    }
    if (doc.pending_wake_hint) {
      tx.tellChild('continuation', { type: 'HINT.FLUSH' });
      this.emitWakeTick(tx, doc.pending_wake_hint.reason, doc.pending_wake_hint.source, doc.pending_wake_hint.created_at);
      doc.pending_wake_hint = null;
      return true;
    }
    const signal = workSignal(factsOf(doc));
    if (signal) {
      const item = doc.work_items.find((w) => w.id === signal.work_item_id);
      const key = `work_queue:${signal.reactivation_mode}:${signal.work_item_id}:${item?.revision ?? 0}`;
      if (!doc.recent_keys.includes(key)) {
        const decision = { kind: 'emit_system_tick' as const, reason: signal.reactivation_mode, model_reentry: true, liveness_only: false, work_item_id: signal.work_item_id, boundary: 'idle_tick' as const, evidence: [key] };
        this.recordDecision(tx, decision);
        admitMessage(
          doc,
          {
            kind: 'system_tick',
            origin: { kind: 'system', subsystem: 'work_queue' },
            authority_class: 'runtime_instruction',
            priority: 'normal',
            body: { type: 'text', text: `${signal.reactivation_mode === 'continue_active' ? 'Continue current work item' : 'Queued work item is available'}: ${item?.objective ?? ''}` },
            work_item_id: signal.work_item_id,
            idempotency_key: key,
            metadata: { work_queue: { reason: signal.reactivation_mode, idempotency_key: key, work_item_id: signal.work_item_id } },
          },
          tx.now,
        );
        tx.emit('message_queued', { kind: 'system_tick', reason: signal.reactivation_mode, work_item_id: signal.work_item_id });
        return true;
      }
    }
    const facts = factsOf(doc);
    // Awaiting a task, the machine takes no IDLE: the task's TASK.SETTLED moves it on.
    if (tx.send({ type: 'IDLE', facts }, { reason: 'no queued input, no runnable work', trigger: 'system' })) {
      this.recordDecision(tx, { kind: 'sleep', reason: 'no_pending_scheduler_facts', model_reentry: false, liveness_only: true, boundary: 'lifecycle_sleep', evidence: [] });
      await this.drainEffects(tx);
      const asleep = tx.doc.state.phase === 'sleeping';
      // Committed at the end: the draft is not used again, so it is handed over, not copied.
      await tx.finish();
      // A failed sleep went through Recovering back to Active: that agent stays live.
      if (asleep) tx.passivate();
    }
    return false;
  }

  private recordDecision(tx: Tx, decision: NonNullable<AgentDoc['last_decision']>): void {
    tx.doc.last_decision = decision;
    tx.emit('scheduler_decision', { ...decision });
  }

  /** Claims the head message and starts its turn (decision recorded before the claim). */
  private async claim(tx: Tx, message: MessageEnvelope): Promise<void> {
    const doc = tx.doc;
    const trigger = triggerOf(doc, message);
    const resolution = trigger ? resolveContinuation(trigger, doc.last_closure) : null;
    const decision = resolution
      ? decideForMessage(factsOf(doc), resolution, message.id)
      : { kind: 'reduce_message_only' as const, reason: 'no_continuation_trigger', model_reentry: false, liveness_only: true, message_id: message.id, evidence: [] };
    this.recordDecision(tx, { ...decision, boundary: 'run_loop' });
    await tx.flush();
    const runId = newId('run');
    const facts = factsOf(doc);
    if (!tx.send({ type: 'TURN.START', runId, facts }, { reason: `turn for ${message.kind} ${message.id}`, trigger: message.authority_class === 'operator_instruction' ? 'user' : 'system' })) {
      throw new DomainError('illegal_transition', `agent ${tx.cell.id} cannot start a turn in ${doc.state.phase}/${doc.state.status}`);
    }
    message.status = 'dequeued';
    message.run_id = runId;
    doc.state.current_run_id = runId;
    doc.state.turn_index += 1;
    doc.state.pending = pendingCount(doc);
    doc.last_turn_terminal = null;
    if (resolution && trigger) {
      // The continuation actor classifies the same trigger; the runtime applies it at once.
      tx.tellChild('continuation', { type: 'TRIGGER', trigger, prior: doc.last_closure, message });
      tx.tellChild('continuation', { type: 'RESOLUTION.APPLIED' });
      doc.state.last_continuation = resolution;
      tx.emit('continuation_resolved', { message_id: message.id, ...resolution });
      resolveWaitsFor(tx, message);
    }
    tx.emit('turn_started', { run_id: runId, message_id: message.id, turn_index: doc.state.turn_index });
    if (message.kind === 'system_tick' && message.origin.kind === 'system' && message.origin.subsystem === 'wake_hint') {
      tx.tellChild('continuation', { type: 'TICK.CONSUMED' });
    }
    if (decision.kind !== 'start_model_turn') {
      this.finishTurn(tx, runId, { actions: [], text: 'reduced without a model turn' });
      return;
    }
    const offer: TurnOffer = {
      run_id: runId,
      agent_id: tx.cell.id,
      lease_ms: this.options.turnLeaseMs,
      messages: [structuredClone(message)],
      closure: doc.last_closure,
      continuation: resolution,
    };
    // The turn runs only once its start is durable.
    if (doc.config.turn_runner === 'http_worker') {
      tx.onCommit(() => this.offers.offer(offer));
    } else {
      const controller = new AbortController();
      this.runs.set(runId, controller);
      tx.onCommit(() => void this.runTurn(tx.cell.id, offer, controller));
    }
  }

  private async runTurn(agentId: string, offer: TurnOffer, controller: AbortController): Promise<void> {
    let result: TurnResult;
    try {
      result = await this.runner.run(offer, controller.signal);
    } catch (error) {
      result = { actions: [{ type: 'fail', reason: error instanceof Error ? error.message : String(error) }] };
    }
    this.runs.delete(offer.run_id);
    await this.mutate(agentId, async (tx) => {
      if (tx.doc.state.current_run_id !== offer.run_id) {
        // A run that already ended (aborted, stopped) and finishes late applies nothing; a live
        // actor still hears of it, and its isStaleRun guard keeps a newer run going.
        if (tx.cell.actor) tx.send({ type: 'TURN.FINISHED', runId: offer.run_id, facts: factsOf(tx.doc) }, { reason: 'stale turn finish', trigger: 'agent' });
        return;
      }
      this.finishTurn(tx, offer.run_id, result);
    }, { pipelined: true }).catch(() => undefined);
  }

  /** Applies a turn's result in one commit; the machine decides where the agent goes next. */
  private finishTurn(tx: Tx, runId: string, result: TurnResult): void {
    const doc = tx.doc;
    const message = doc.queue.find((m) => m.run_id === runId);
    let failed = false;
    const starts: TaskRecord[] = [];
    for (const action of result.actions) {
      const outcome = this.applyAction(tx, action, message ?? null);
      if (outcome === 'failed') failed = true;
      if (outcome && typeof outcome === 'object') starts.push(outcome);
    }
    if (message) message.status = 'processed';
    doc.state.current_run_id = null;
    doc.state.pending = pendingCount(doc);
    doc.last_turn_terminal = failed ? 'failed' : 'completed';
    doc.runtime_error = failed;
    doc.last_closure = deriveClosure(factsOf(doc));
    tx.send({ type: 'TURN.FINISHED', runId, facts: factsOf(doc) }, { reason: failed ? 'turn failed' : 'turn completed', trigger: 'agent' });
    tx.emit('turn_finished', { run_id: runId, closure: doc.last_closure, text: (result.text ?? '').slice(0, 2000) });
    if (message) this.notifyInvoker(tx, message, failed, result.text ?? '');
    for (const task of starts) this.launchAfterCommit(tx.cell.id, task.id);
  }

  private applyAction(tx: Tx, action: TurnAction, message: MessageEnvelope | null): TaskRecord | 'failed' | null {
    const doc = tx.doc;
    switch (action.type) {
      case 'exec_command': {
        const task = this.createTaskRecord(tx, {
          summary: action.summary ?? action.cmd.slice(0, 200),
          cmd: action.cmd,
          accepts_input: action.accepts_input ?? false,
          ...(action.timeout_ms ? { timeout_ms: action.timeout_ms } : {}),
          ...(message?.work_item_id ? { work_item_id: message.work_item_id } : {}),
        }, message?.run_id ?? null);
        if (action.wait) this.createWaitRecord(tx, { wake: 'task_result', reason: `waiting for task ${task.id}`, resource: task.id });
        return task;
      }
      case 'wait_for':
        this.createWaitRecord(tx, { wake: action.wake, reason: action.reason ?? 'waiting', ...(action.resource ? { resource: action.resource } : {}), ...(action.work_item_id ? { work_item_id: action.work_item_id } : {}) });
        return null;
      case 'enqueue':
        admitMessage(doc, { kind: 'internal_followup', origin: { kind: 'system', subsystem: 'tool_enqueue' }, authority_class: 'runtime_instruction', priority: action.priority ?? 'next', body: { type: 'text', text: action.text }, work_item_id: message?.work_item_id ?? null }, tx.now);
        tx.emit('message_queued', { kind: 'internal_followup' });
        return null;
      case 'create_work_item':
        this.createWorkItemRecord(tx, action.objective);
        return null;
      case 'complete_work_item': {
        const item = doc.work_items.find((w) => w.id === action.work_item_id);
        if (item && item.state === 'open') this.completeWorkItemRecord(tx, item, action.report ?? 'completed by the agent');
        return null;
      }
      case 'set_timer': {
        const timer = this.createTimerRecord(tx, { duration_ms: action.duration_ms });
        if (action.wait) this.createWaitRecord(tx, { wake: 'timer', reason: `waiting for timer ${timer.id}`, resource: timer.id });
        return null;
      }
      case 'sleep':
        return null;
      case 'fail':
        tx.emit('turn_finished', { note: 'fail directive', reason: action.reason });
        return 'failed';
    }
  }

  // ---------------------------------------------------------------- records

  private createWorkItemRecord(tx: Tx, objective: string) {
    const now = tx.now.toISOString();
    const item = { id: newId('wi'), agent_id: tx.cell.id, revision: 1, objective, state: 'open' as const, plan_status: 'draft' as const, blocked_by: null, recheck_at: null, result_summary: null, created_at: now, updated_at: now };
    tx.doc.work_items.push(item);
    if (!tx.doc.state.current_work_item_id) tx.doc.state.current_work_item_id = item.id;
    tx.emit('work_item_created', { work_item_id: item.id, objective });
    return item;
  }

  private completeWorkItemRecord(tx: Tx, item: AgentDoc['work_items'][number], report: string): void {
    const now = tx.now.toISOString();
    item.state = 'completed';
    item.result_summary = report;
    item.revision += 1;
    item.updated_at = now;
    item.blocked_by = null;
    cancelOwnedWaits(tx, item.id, 'work_item_completed');
    if (tx.doc.state.current_work_item_id === item.id) tx.doc.state.current_work_item_id = null;
    tx.emit('work_item_completed', { work_item_id: item.id });
  }

  private createWaitRecord(tx: Tx, request: { wake: CreateWaitRequest['wake']; reason: string; resource?: string; work_item_id?: string; wake_at?: string }): WaitConditionRecord {
    const now = tx.now.toISOString();
    const owner = request.work_item_id ?? null;
    // At most one unresolved wait per owner: a new WaitFor replaces the previous one.
    cancelOwnedWaits(tx, owner, 'wait_for_replaced');
    const wait: WaitConditionRecord = {
      id: newId('wait'),
      agent_id: tx.cell.id,
      work_item_id: owner,
      status: 'active',
      kind: WAIT_KIND_OF_WAKE[request.wake],
      subject_ref: request.resource ?? null,
      waiting_for: request.reason,
      wake_at: request.wake_at ?? null,
      created_at: now,
      updated_at: now,
      resolved_at: null,
      trigger_message_id: null,
    };
    tx.doc.waits.push(wait);
    if (owner) {
      const item = tx.doc.work_items.find((w) => w.id === owner);
      if (item) {
        item.blocked_by = request.reason;
        item.revision += 1;
        item.updated_at = now;
      }
    }
    tx.emit('wait_created', { ...wait });
    // A task already finished: its result is queued already, so the wait triggers at once.
    if (wait.kind === 'task') {
      const task = tx.doc.tasks.find((t) => t.id === wait.subject_ref);
      if (task && isTerminalTask(task.status)) wait.status = 'triggered';
    }
    tx.tellChild('continuation', { type: 'WAIT.SET', waitId: wait.id, kind: wait.kind, reason: wait.waiting_for, resource: wait.subject_ref, workItemId: wait.work_item_id } );
    return wait;
  }

  private createTimerRecord(tx: Tx, request: { duration_ms: number; interval_ms?: number; summary?: string }): TimerRecord {
    const now = tx.now;
    const timer: TimerRecord = {
      id: newId('tmr'),
      agent_id: tx.cell.id,
      created_at: now.toISOString(),
      duration_ms: request.duration_ms,
      interval_ms: request.interval_ms ?? null,
      status: 'active',
      summary: request.summary ?? null,
      next_fire_at: new Date(now.getTime() + request.duration_ms).toISOString(),
      last_fired_at: null,
      fire_count: 0,
    };
    tx.doc.timers.push(timer);
    tx.emit('timer_created', { ...timer });
    const due = timer.next_fire_at as string;
    tx.onCommit(() => this.alarms.arm(tx.cell.id, timer.id, due));
    return timer;
  }

  private cancelTimerRecord(tx: Tx, timer: TimerRecord): void {
    timer.status = 'cancelled';
    timer.next_fire_at = null;
    this.alarms.disarm(tx.cell.id, timer.id);
    tx.emit('timer_cancelled', { timer_id: timer.id });
    // A wait on it could never end now: it ends with the timer.
    for (const wait of tx.doc.waits) {
      if (wait.kind === 'timer' && wait.subject_ref === timer.id && isActiveWait(wait)) endWait(tx, wait, { status: 'cancelled', reason: 'timer_cancelled' });
    }
  }

  private revokeTriggerRecord(tx: Tx, trigger: ExternalTriggerRecord): void {
    trigger.status = 'revoked';
    trigger.revoked_at = tx.now.toISOString();
    tx.emit('trigger_revoked', { trigger_id: trigger.id, delivery_mode: trigger.delivery_mode });
  }

  private provisionTrigger(tx: Tx, mode: DeliveryMode, isDefault: boolean): TriggerCapability {
    const token = mintToken();
    const trigger: ExternalTriggerRecord = {
      id: newId('trg'),
      target_agent_id: tx.cell.id,
      scope: 'agent',
      delivery_mode: mode,
      token_hash: hashToken(token),
      status: 'active',
      is_default: isDefault,
      created_at: tx.now.toISOString(),
      revoked_at: null,
      last_delivered_at: null,
      delivery_count: 0,
    };
    tx.doc.triggers.push(trigger);
    tx.emit('trigger_created', { trigger_id: trigger.id, delivery_mode: mode, is_default: isDefault });
    const capability = { trigger: triggerSummary(trigger), token, delivery_mode: mode };
    tx.minted.push(capability);
    return capability;
  }

  private provisionDefaultTrigger(tx: Tx): void {
    if (tx.doc.triggers.some((t) => t.is_default && t.status === 'active')) return;
    this.provisionTrigger(tx, 'wake_hint', true);
  }

  // ---------------------------------------------------------------- tasks

  private createTaskRecord(tx: Tx, request: { summary: string; cmd: string; workdir?: string; accepts_input: boolean; timeout_ms?: number; work_item_id?: string }, runId: string | null): TaskRecord {
    const now = tx.now.toISOString();
    const task: TaskRecord = {
      id: newId('task'),
      agent_id: tx.cell.id,
      kind: 'command_task',
      status: 'queued',
      summary: request.summary,
      created_at: now,
      updated_at: now,
      work_item_id: request.work_item_id ?? null,
      parent_run_id: runId,
      accepts_input: request.accepts_input,
      cmd: request.cmd,
      workdir: request.workdir ?? null,
      timeout_ms: request.timeout_ms ?? null,
      exit_code: null,
      reason: null,
      child_agent_id: null,
      output_bytes: 0,
      result_text: null,
    };
    appendRecord(tx.doc, 'tasks', task);
    tx.send({ type: 'TASK.SPAWN', taskId: task.id, kind: task.kind, acceptsInput: task.accepts_input }, { reason: 'task spawned', trigger: 'agent' });
    // The effect is recorded before it runs: a crash in between leaves it in doubt, never re-run.
    appendRecord(tx.doc, 'effects', { idempotency_key: `start_command:${task.id}`, agent_id: tx.cell.id, kind: 'start_command', status: 'started', started_at: now, finished_at: null, detail: { task_id: task.id } });
    tx.emit('task_status_changed', { task_id: task.id, status: 'queued', kind: task.kind, summary: task.summary });
    return task;
  }

  private readonly taskEnv = new Map<string, Record<string, string>>();

  private artifactPath(agentId: string, taskId: string): string {
    return join(this.options.dataDir, 'artifacts', agentId, `${taskId}.log`);
  }

  /**
   * Launches the task once the operation creating it is done. The launch is an operation of its
   * own, which starts only once the commit recording the start is durable (never pipelined), so a
   * crash cannot leave a process without its record; tasks created meanwhile share it. A task
   * whose launch did not run (a closing runtime) waits for the agent's next launch.
   */
  private launchAfterCommit(agentId: string, taskId: string): void {
    this.launches.add(agentId, taskId);
  }

  private async launchTasks(agentId: string, take: () => string[]): Promise<void> {
    if (this.leaseLost || this.closing) return;
    const cell = await this.cell(agentId);
    await cell.run(async (tx) => {
      const taskIds = take();
      // A command starts before the commit that records it: a fenced instance must learn first.
      if (!(await stillHoldsLease(this.store, this.lease))) return this.onLeaseLost();
      for (const taskId of taskIds) this.launchTask(tx, taskId);
    });
  }

  /** Starts a queued command task whose creation is committed. */
  private launchTask(tx: Tx, taskId: string): void {
    const agentId = tx.cell.id;
    const task = tx.doc.tasks.find((t) => t.id === taskId);
    if (!task || task.status !== 'queued' || !task.cmd) return;
    // At the bound it stays queued: the next recorded result launches the agent's queued tasks.
    if (tx.doc.tasks.filter(isRunningCommand).length >= this.options.maxRunningTasks) return;
    const handle = startCommand({
      cmd: task.cmd,
      ...(task.workdir ? { cwd: task.workdir } : {}),
      ...(this.taskEnv.get(taskId) ? { env: this.taskEnv.get(taskId) as Record<string, string> } : {}),
      acceptsInput: task.accepts_input,
      timeoutMs: task.timeout_ms,
      artifactPath: this.artifactPath(agentId, taskId),
      killGraceMs: this.options.killGraceMs,
    });
    this.taskEnv.delete(taskId);
    this.live.set(taskId, { handle });
    void handle.result.then((result) => this.onTaskResult(agentId, taskId, result));
    const effect = tx.doc.effects.find((e) => e.idempotency_key === `start_command:${taskId}`);
    if (effect) {
      effect.status = handle.pid === null ? 'failed' : 'done';
      effect.finished_at = tx.now.toISOString();
      effect.detail = { ...effect.detail, pid: handle.pid };
    }
    // No pid: the process never started (bad cwd ...); the task fails from Queued on its result.
    if (handle.pid === null) return;
    task.status = 'running';
    task.updated_at = tx.now.toISOString();
    tx.tellChild(taskId, { type: 'START' });
    tx.emit('task_status_changed', { task_id: taskId, status: 'running', pid: handle.pid });
  }

  /**
   * A command ended: its result is recorded by the agent's next result operation, which every
   * command that ends meanwhile shares (a burst of 100 short commands costs one commit, not 100).
   */
  private onTaskResult(agentId: string, taskId: string, result: CommandResult): void {
    const live = this.live.get(taskId);
    this.live.delete(taskId);
    if (!live || this.leaseLost) return;
    this.results.add(agentId, { taskId, handle: live.handle, result });
  }

  private async recordResults(agentId: string, take: () => FinishedCommand[]): Promise<void> {
    const waiting = await this.mutate(agentId, async (tx) => {
      for (const finished of take()) this.recordResult(tx, finished);
      return tx.doc.tasks.filter((t) => t.status === 'queued' && t.cmd !== null).map((t) => t.id);
    }, { allowTerminated: true, pipelined: true });
    // Processes ended: queued tasks held back by maxRunningTasks may start now, oldest first.
    for (const taskId of waiting) this.launchAfterCommit(agentId, taskId);
  }

  private recordResult(tx: Tx, { taskId, handle, result }: FinishedCommand): void {
    const task = tx.doc.tasks.find((t) => t.id === taskId);
    if (!task || isTerminalTask(task.status)) return;
    task.output_bytes = result.output_bytes;
    const status = result.outcome === 'completed' ? 'completed' : result.outcome === 'cancelled' ? 'cancelled' : 'failed';
    if (result.reason === 'spawn_failed') tx.tellChild(taskId, { type: 'SPAWN_FAILED', reason: 'spawn_failed' });
    else if (result.reason === 'timeout') tx.tellChild(taskId, { type: 'TIMED_OUT' });
    else tx.tellChild(taskId, { type: 'EXITED', exitCode: result.exit_code ?? -1 });
    task.result_text = handle.preview(2000);
    this.finishTaskRecord(tx, task, { status, exit_code: result.exit_code, reason: result.reason });
  }

  /** A task's terminal record, its result message and the exact wait it satisfies, in one commit. */
  private finishTaskRecord(tx: Tx, task: TaskRecord, end: { status: TaskRecord['status']; exit_code: number | null; reason: string | null }, options: { enqueueResult?: boolean } = {}): void {
    const now = tx.now.toISOString();
    task.status = end.status;
    task.exit_code = end.exit_code;
    task.reason = end.reason;
    task.updated_at = now;
    if (end.status === 'interrupted') tx.tellChild(task.id, { type: 'INTERRUPT', reason: end.reason ?? 'interrupted' });
    tx.emit('task_status_changed', { task_id: task.id, status: task.status, exit_code: task.exit_code, reason: task.reason });
    if (options.enqueueResult ?? true) {
      admitMessage(
        tx.doc,
        {
          kind: 'task_result',
          origin: { kind: 'task', task_id: task.id },
          authority_class: 'runtime_instruction',
          priority: 'next',
          body: { type: 'json', value: { task_id: task.id, status: task.status, exit_code: task.exit_code, reason: task.reason, output_preview: task.result_text ?? '' } },
          task_id: task.id,
          work_item_id: task.work_item_id,
          idempotency_key: `task_result:${task.id}`,
        },
        tx.now,
      );
      tx.emit('message_queued', { kind: 'task_result', task_id: task.id });
    }
    taskEnded(tx, task.id, options.enqueueResult ?? true);
    const facts = factsOf(tx.doc);
    tx.send({ type: 'TASK.SETTLED', facts }, { reason: `task ${task.id} ${task.status}`, trigger: 'system' });
  }

  // ---------------------------------------------------------------- invocation results

  /** A child agent finished the turn its invoker asked for: the result re-enters the parent's task. */
  private notifyInvoker(tx: Tx, message: MessageEnvelope, failed: boolean, text: string): void {
    const invokedBy = message.metadata['invoked_by'] as { agent_id: string; task_id: string } | undefined;
    if (!invokedBy) return;
    const key = `emit_parent_result:${invokedBy.task_id}`;
    if (tx.doc.effects.some((e) => e.idempotency_key === key)) return;
    appendRecord(tx.doc, 'effects', { idempotency_key: key, agent_id: tx.cell.id, kind: 'emit_parent_result', status: 'started', started_at: tx.now.toISOString(), finished_at: null, detail: { parent_agent_id: invokedBy.agent_id, task_id: invokedBy.task_id, failed, text: text.slice(0, 8000) } });
    tx.onCommit(() => void this.deliverInvocationResult(tx.cell.id, invokedBy, failed, text, key).catch(() => undefined));
  }

  private async deliverInvocationResult(childId: string, invokedBy: { agent_id: string; task_id: string }, failed: boolean, text: string, key: string): Promise<void> {
    await this.mutate(invokedBy.agent_id, async (tx) => {
      const task = tx.doc.tasks.find((t) => t.id === invokedBy.task_id);
      if (!task || isTerminalTask(task.status)) return;
      task.result_text = text.slice(0, 8000);
      tx.tellChild(task.id, { type: 'EXITED', exitCode: failed ? 1 : 0 });
      this.finishTaskRecord(tx, task, { status: failed ? 'failed' : 'completed', exit_code: null, reason: failed ? 'child_turn_failed' : null });
    }, { allowTerminated: true });
    await this.mutate(childId, async (tx) => {
      const effect = tx.doc.effects.find((e) => e.idempotency_key === key);
      if (!effect || effect.status !== 'started') return;
      effect.status = 'done';
      effect.finished_at = tx.now.toISOString();
      tx.emit('effect_recorded', { ...effect });
    }, { allowTerminated: true });
  }

  // ======================================================================= API

  async createAgent(request: CreateAgentRequest, options: { idempotency_key?: string } = {}) {
    const req = CreateAgentRequest.parse(request);
    this.fencingToken();
    const key = options.idempotency_key;
    // Creates with one key run one after the other: a later one finds what the first recorded.
    return key === undefined ? this.createOnce(req, null) : this.createKeys.run(key, () => this.createOnce(req, key));
  }

  /**
   * Seed 002 steps 1–6. With a key, the key names the identity durably before the identity is
   * written (`create:<key>` → agent id), so a retry after a crash at any later point resumes that
   * agent: never a second identity (acceptance #1).
   */
  private async createOnce(req: CreateAgentRequest, key: string | null): Promise<{ agent: AgentSummary; external_trigger: TriggerCapability; replayed: boolean }> {
    const fingerprint = JSON.stringify(req);
    const globalKey = key === null ? null : `create:${key}`;
    const prior = globalKey === null ? undefined : ((await this.store.getGlobal(globalKey)) as { agent_id: string; fingerprint: string } | undefined);
    if (prior && prior.fingerprint !== fingerprint) throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with another body');
    const agentId = prior?.agent_id ?? req.agent_id ?? newId('agent');
    const existing = await this.loadCell(agentId);
    if (existing) {
      if (!prior) throw new DomainError('agent_exists', `agent ${agentId} already exists`, { agent_id: agentId });
      return this.resumeCreate(agentId);
    }
    if (globalKey && !prior) await this.store.putGlobal(globalKey, { agent_id: agentId, fingerprint }, this.fencingToken());
    const now = this.clock.now().toISOString();
    const doc: AgentDoc = {
      identity: {
        agent_id: agentId,
        kind: 'agent',
        profile_preset: req.profile ?? 'default',
        owner: req.owner ?? 'operator',
        mission: req.mission ?? '',
        registry_status: 'active',
        identity_version: 1,
        parent_agent_id: null,
        created_at: now,
      },
      config: { turn_runner: req.config?.turn_runner ?? 'scripted', model: req.config?.model ?? 'scripted' },
      state: { agent_id: agentId, status: 'booting', phase: 'created', state_version: 0, current_run_id: null, current_work_item_id: null, pending: 0, turn_index: 0, sleeping_until: null, last_continuation: null },
      machine: null,
      queue: [],
      next_message_seq: 1,
      work_items: [],
      waits: [],
      timers: [],
      tasks: [],
      triggers: [],
      effects: [],
      transitions: [],
      pending_transition: null,
      transition_count: 0,
      snapshots: [],
      last_closure: null,
      last_turn_terminal: null,
      last_decision: null,
      runtime_error: false,
      pending_wake_hint: null,
      recent_keys: [],
      idempotency: [],
      refusal: null,
      failure: null,
      last_commit_at: now,
    };
    // Seed 002 steps 1–2: identity first, durably, in Created.
    const cell = new AgentCell(agentId, doc, 0, this.env);
    cell.ensureActor();
    doc.machine = cell.actor?.getPersistedSnapshot() ?? null;
    let created;
    const roster = rosterOf(doc);
    try {
      created = await this.store.commit({ agent_id: agentId, expected_version: null, doc, events: [{ type: 'agent_created', payload: { agent_id: agentId, mission: doc.identity.mission }, ts: now }], fencing_token: this.fencingToken(), roster });
    } catch (error) {
      cell.passivate();
      if (error instanceof DomainError && error.code === 'version_conflict') throw new DomainError('agent_exists', `agent ${agentId} already exists`, { agent_id: agentId });
      throw error;
    }
    cell.commitDone(doc, created.version);
    cell.rosterJson = JSON.stringify(roster);
    this.roster.set(agentId, roster);
    this.cells.set(agentId, cell);
    this.bus.publish(created.events);
    // Steps 3–6: checks, trigger + lease, first snapshot, commit to Active.
    const minted = await this.mutate(agentId, async (tx) => {
      tx.send({ type: 'INITIALIZE' }, { reason: 'agent created', trigger: 'user' });
      await tx.flush();
      await this.drainEffects(tx);
      return tx.minted.at(-1);
    });
    if (!minted) throw new DomainError('internal_error', 'initialization did not provision a capability');
    return { agent: assembleSummary(cell), external_trigger: minted, replayed: false };
  }

  /**
   * A retried create of an agent that exists under its key: an initialization the first attempt
   * did not finish is resumed (and shows the capability it mints), a finished one is answered as it is.
   */
  private async resumeCreate(agentId: string): Promise<{ agent: AgentSummary; external_trigger: TriggerCapability; replayed: boolean }> {
    const { summary, minted } = await this.mutate(agentId, async (tx) => {
      if (tx.doc.state.phase === 'created') tx.send({ type: 'INITIALIZE' }, { reason: 'create retried', trigger: 'user' });
      await this.drainEffects(tx);
      return { summary: draftSummary(tx), minted: tx.minted.at(-1) };
    }, { allowTerminated: true });
    const trigger = summary.active_external_triggers.at(0);
    return {
      agent: summary,
      external_trigger: minted ?? { trigger: trigger ?? { id: '', delivery_mode: 'wake_hint' as const, status: 'revoked' as const }, token: '', delivery_mode: 'wake_hint' as const },
      replayed: true,
    };
  }

  /** Served from the roster: listing loads no document. */
  async listAgents(query: AgentListQuery): Promise<Page<AgentListEntry>> {
    const q = AgentListQuery.parse(query);
    const { ids, more } = this.roster.page(q.cursor, q.limit, { q: q.q, status: q.status });
    const items: AgentListEntry[] = [];
    for (const id of ids) {
      const entry = this.roster.get(id);
      if (entry) items.push({ agent_id: id, ...entry.listing });
    }
    const last = ids.at(-1);
    return { items, next_cursor: last !== undefined && more ? last : null };
  }

  async getSummary(agentId: string): Promise<AgentSummary> {
    return assembleSummary(await this.cell(agentId));
  }

  async accepts(agentId: string): Promise<StateAccepts> {
    return acceptsOf(this.env.logic, await this.cell(agentId));
  }

  async getState(agentId: string): Promise<AgentStateView> {
    const cell = await this.cell(agentId);
    const doc = cell.doc;
    return {
      summary: assembleSummary(cell),
      queue: doc.queue.filter((m) => m.status === 'queued' || m.status === 'interrupted' || m.status === 'dequeued'),
      tasks: doc.tasks.filter((t) => !isTerminalTask(t.status)),
      timers: doc.timers,
      work_items: doc.work_items.map((w) => workItemView(doc, w)),
      waits: doc.waits.filter((w) => w.status === 'active' || w.status === 'triggered'),
      triggers: doc.triggers.map(triggerSummary),
      last_decision: doc.last_decision,
    };
  }

  async control(agentId: string, request: ControlRequest, options: MutationOptions = {}): Promise<AgentSummary> {
    const req = ControlRequest.parse(request);
    const expected = req.expected_version ?? options.expected_version;
    return this.mutate(agentId, async (tx) => {
      const changes = req.action === 'stop' ? tx.doc.state.status !== 'stopped' : tx.doc.state.status === 'stopped';
      if (req.action === 'stop' && changes) {
        if (!tx.send({ type: 'STOP', reason: 'operator stop' }, { reason: 'operator stop', trigger: 'user', initiator: 'operator', principal: 'control_token' })) {
          throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'illegal_transition', `agent ${agentId} cannot stop in phase ${tx.doc.state.phase}`);
        }
      } else if (changes) {
        tx.send({ type: 'START' }, { reason: 'operator start', trigger: 'user', initiator: 'operator', principal: 'control_token' });
      }
      if (changes) {
        tx.emit('control_applied', { action: req.action });
        await this.drainEffects(tx);
      }
      // Started back asleep (it was stopped asleep): asleep holds no actor.
      if (tx.doc.state.phase === 'sleeping') tx.passivate();
      return draftSummary(tx);
    }, { ...options, ...(expected !== undefined ? { expected_version: expected } : {}) });
  }

  async transition(agentId: string, request: TransitionRequest, options: MutationOptions = {}): Promise<{ record: TransitionRecord; replayed: boolean }> {
    const req = TransitionRequest.parse(request);
    const cell = await this.cell(agentId);
    if (findTransition(cell.doc, req.transition_id)) return { record: this.transitionResult(cell.doc, req.transition_id), replayed: true };
    const record = await this.mutate(agentId, async (tx) => {
      if (findTransition(tx.doc, req.transition_id)) return this.transitionResult(tx.doc, req.transition_id);
      return this.explicitTransition(tx, req);
    }, { ...options, expected_version: req.expected_version, allowTerminated: false });
    return { record, replayed: false };
  }

  /** The seed-002 protocol for a client-requested transition. */
  private async explicitTransition(tx: Tx, req: TransitionRequest): Promise<TransitionRecord> {
    const requestedAt = tx.now.toISOString();
    const from = tx.doc.state.phase;
    const event = transitionEvent(req.to, req.reason, tx.doc);
    const snapshot = tx.cell.ensureActor().getSnapshot();
    if (!snapshot.can(event)) {
      const guarded = this.isGuardRefusal(req.to, tx);
      if (guarded) throw refusedByState(snapshot, tx.cell.id, tx.doc, 'guard_rejected', `guard ${guarded} refused ${from} → ${req.to}`, { guard: guarded, from, to: req.to });
      throw refusedByState(snapshot, tx.cell.id, tx.doc, 'illegal_transition', `no transition from ${from} (${statePath(snapshot.value)}) to ${req.to}`, { from, to: req.to });
    }
    // A target without a transitional state commits at once; the phases it went through are its own.
    const at = tx.now.toISOString();
    tx.send(event, {
      reason: req.reason,
      trigger: 'user',
      transition_id: req.transition_id,
      initiator: req.actor?.initiator ?? 'operator',
      principal: req.actor?.principal ?? 'control_token',
      evidence_refs: req.evidence_refs ?? [],
      requested_at: requestedAt,
      phases: [
        { phase: 'transition_requested', at: requestedAt },
        { phase: 'guard_checked', at },
        { phase: 'transition_committed', at },
      ],
    });
    await tx.flush();
    // `to: active` from sleeping runs through waking, `to: terminated` through terminating: their
    // effects run now, and the transition out of the transitional state carries all five phases.
    await this.drainEffects(tx);
    if (tx.doc.state.phase === 'sleeping') {
      await tx.flush();
      tx.passivate();
    }
    const refusal = tx.doc.refusal;
    if (refusal && (req.to === 'active' || req.to === 'waking') && tx.doc.state.phase === 'sleeping') {
      throw new DomainError('snapshot_incompatible', `${refusal.reason}; ${refusal.hint}`, { hint: refusal.hint, transition_id: req.transition_id });
    }
    return this.transitionResult(tx.doc, req.transition_id);
  }

  /**
   * What a client's transition answers with: its record, with every protocol phase it went
   * through — those of the transition out of the transitional state included, when there was one
   * (that record names the request as `transition:<id>`). The stored record keeps its own phases;
   * the full protocol is in the `transition_phase` events too.
   */
  private transitionResult(doc: AgentDoc, transitionId: string): TransitionRecord {
    const opened = findTransition(doc, transitionId);
    if (!opened) throw new DomainError('internal_error', `transition ${transitionId} did not commit`);
    const closed = doc.transitions.find((t) => t.evidence_refs.includes(closingRef(transitionId)));
    return closed ? { ...opened, phases: closed.phases } : opened;
  }

  private isGuardRefusal(to: TransitionRequest['to'], tx: Tx): string | null {
    const value = statePath(tx.cell.ensureActor().getSnapshot().value);
    if (to === 'sleeping' && value === 'active.awakeIdle') return 'canSleep';
    return null;
  }

  /** The reason chain, read from the event log (the document keeps only recent records). */
  async listTransitions(agentId: string, query: { after_seq?: number; limit: number }): Promise<TransitionRecord[]> {
    await this.cell(agentId);
    const out: TransitionRecord[] = [];
    let after = 0;
    for (;;) {
      const page = await this.store.readEvents(agentId, { after_seq: after, limit: 512, order: 'asc' });
      for (const record of reasonChain(page.events).transitions) {
        if (record.seq > (query.after_seq ?? 0) && out.length < query.limit) out.push(record);
      }
      const last = page.events.at(-1);
      if (!last || out.length >= query.limit || last.event_seq >= page.newest_seq) return out;
      after = last.event_seq;
    }
  }

  async takeSnapshot(agentId: string, options: MutationOptions = {}): Promise<Snapshot> {
    return this.mutate(agentId, async (tx) => this.takeSnapshotInto(tx, 'on_request'), options);
  }

  async listSnapshots(agentId: string): Promise<Snapshot[]> {
    return (await this.cell(agentId)).doc.snapshots;
  }

  async getSnapshot(agentId: string, snapshotId: string): Promise<Snapshot> {
    const snapshot = (await this.cell(agentId)).doc.snapshots.find((s) => s.snapshot_id === snapshotId);
    if (!snapshot) throw new DomainError('snapshot_not_found', `snapshot ${snapshotId} not found`);
    return snapshot;
  }

  /**
   * `holon-xstate migrate`: rewrites the agent's intact snapshots of another schema version at the
   * current one. Corrupted snapshots are left as they are (`skipped_corrupted`): waking on them
   * goes through Recovering, which builds a fresh recovery point.
   */
  async migrate(agentId: string): Promise<{ migrated: number; skipped_corrupted: number }> {
    return this.mutate(agentId, async (tx) => {
      let migrated = 0;
      let skipped = 0;
      tx.doc.snapshots = tx.doc.snapshots.map((snapshot) => {
        const next = migrateSnapshot(snapshot);
        if (!next) skipped += 1;
        else if (next !== snapshot) migrated += 1;
        return next ?? snapshot;
      });
      tx.doc.refusal = null;
      tx.emit('snapshot_taken', { migrated, skipped_corrupted: skipped });
      return { migrated, skipped_corrupted: skipped };
    });
  }

  async abortRun(agentId: string, request: AbortRunRequest, options: MutationOptions = {}) {
    const req = AbortRunRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      const runId = tx.doc.state.current_run_id;
      if (!runId) throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'no_current_run', `agent ${agentId} has no current run`);
      if (req.run_id && req.run_id !== runId) throw new DomainError('stale_run_id', `run ${req.run_id} is not the current run ${runId}`, { current_run_id: runId });
      this.runs.get(runId)?.abort();
      this.offers.cancel(runId);
      for (const message of tx.doc.queue) if (message.run_id === runId && message.status === 'dequeued') message.status = 'aborted';
      tx.doc.state.current_run_id = null;
      tx.doc.last_turn_terminal = 'aborted';
      tx.send({ type: 'TURN.ABORT' }, { reason: 'operator aborted the run', trigger: 'user', initiator: 'operator' });
      tx.emit('current_run_aborted', { run_id: runId });
      // The abort ends the run only: tasks and triggers stay (holon-reference §11).
      tx.cell.takeEffects();
      return { agent_id: agentId, run_id: runId, aborted: true as const };
    }, options);
  }

  async terminate(agentId: string, options: MutationOptions = {}): Promise<AgentSummary> {
    return this.mutate(agentId, async (tx) => {
      if (tx.doc.state.phase !== 'terminated') {
        if (!tx.send({ type: 'TERMINATE', reason: 'operator delete' }, { reason: 'operator delete', trigger: 'user', initiator: 'operator' })) {
          throw refusedByState(tx.cell.ensureActor().getSnapshot(), agentId, tx.doc, 'illegal_transition', `agent ${agentId} cannot terminate from ${tx.doc.state.phase}`);
        }
        await tx.flush();
        await this.drainEffects(tx);
      }
      if (tx.doc.state.phase === 'terminated') tx.passivate();
      return draftSummary(tx);
    }, { ...options, allowTerminated: true });
  }

  // ---------------------------------------------------------------- messages

  private refuseStopped(tx: Tx): void {
    if (tx.doc.state.status === 'stopped') {
      throw new DomainError('agent_stopped', `agent ${tx.cell.id} is stopped; POST /api/control/agents/${tx.cell.id}/control {"action":"start"} first`);
    }
  }

  private queueMessage(agentId: string, message: NewMessage, options: MutationOptions = {}, delivery?: Delivery): Promise<MessageAccepted> {
    return this.mutate(agentId, async (tx) => {
      this.refuseStopped(tx);
      const envelope = admitMessage(tx.doc, message, tx.now);
      tx.emit('message_queued', { message_id: envelope.id, kind: envelope.kind, priority: envelope.priority });
      if (delivery) this.recordDelivery(tx, delivery, 'enqueued');
      return { agent_id: agentId, message_id: envelope.id };
    }, { ...options, pipelined: true, shallow: true });
  }

  async prompt(agentId: string, request: PromptRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    const req = PromptRequest.parse(request);
    if (req.work_item_id) {
      const cell = await this.cell(agentId);
      if (!cell.doc.work_items.some((w) => w.id === req.work_item_id)) throw new DomainError('work_item_not_found', `work item ${req.work_item_id} not found`);
    }
    return this.queueMessage(agentId, { kind: 'operator_prompt', origin: { kind: 'operator' }, authority_class: 'operator_instruction', priority: 'interject', body: { type: 'text', text: req.text }, work_item_id: req.work_item_id ?? null }, options);
  }

  async enqueue(agentId: string, request: EnqueueRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    const req = EnqueueRequest.parse(request);
    const origin = req.origin ?? (req.kind === 'channel_event' ? { kind: 'channel' as const, channel_id: 'http' } : { kind: 'webhook' as const, source: 'http' });
    if ((req.kind === 'channel_event') !== (origin.kind === 'channel')) throw new DomainError('forbidden', `kind ${req.kind} does not go with origin ${origin.kind}`);
    const body = req.json !== undefined ? { type: 'json' as const, value: req.json } : { type: 'text' as const, text: req.text ?? '' };
    return this.queueMessage(agentId, { kind: req.kind, origin, authority_class: origin.kind === 'channel' ? 'external_evidence' : 'integration_signal', priority: req.priority, body }, options);
  }

  async wake(agentId: string, request: WakeRequest, options: MutationOptions = {}): Promise<WakeResult> {
    const req = WakeRequest.parse(request);
    return this.submitWakeHint(agentId, req.reason, req.source ?? 'control', null, undefined, options);
  }

  /** Seed 003 wake hint: liveness only, deduplicated while one is pending. */
  private submitWakeHint(agentId: string, reason: string, source: string, triggerId: string | null, delivery?: Delivery, options: MutationOptions = {}): Promise<WakeResult> {
    return this.mutate(agentId, async (tx) => {
      const doc = tx.doc;
      const queueDepth = doc.queue.filter((m) => m.status === 'queued' || m.status === 'interrupted').length;
      const disposition = wakeHintDisposition({ status: doc.state.status, queue_depth: queueDepth });
      const hint = { reason, source };
      tx.tellChild('continuation', { type: 'WAKE_HINT', hint, status: doc.state.status, queueDepth } );
      tx.emit('wake_hint', { disposition, reason, source, external_trigger_id: triggerId });
      const tickQueued = doc.queue.some((m) => m.status === 'queued' && m.origin.kind === 'system' && m.origin.subsystem === 'wake_hint');
      if (disposition === 'coalesced' && !tickQueued) {
        // Level-triggered: the latest hint is kept and replayed once the agent is idle again.
        doc.pending_wake_hint = { reason, source, external_trigger_id: triggerId, created_at: tx.now.toISOString() };
      } else if (disposition === 'triggered') {
        doc.pending_wake_hint = null;
        this.recordDecision(tx, { kind: 'emit_system_tick', reason: 'wake_hint', model_reentry: true, liveness_only: false, boundary: 'idle_tick', evidence: [`source:${source}`] });
        this.emitWakeTick(tx, reason, source, tx.now.toISOString(), triggerId);
      }
      if (delivery) this.recordDelivery(tx, delivery, disposition);
      return { agent_id: agentId, disposition };
    }, { ...options, pipelined: true });
  }

  private emitWakeTick(tx: Tx, reason: string, source: string | null, createdAt: string, triggerId: string | null = null): void {
    const key = `wake_hint:${triggerId ?? source ?? 'unknown'}:${createdAt}`;
    if (tx.doc.recent_keys.includes(key)) return;
    admitMessage(tx.doc, { kind: 'system_tick', origin: { kind: 'system', subsystem: 'wake_hint' }, authority_class: 'runtime_instruction', priority: 'next', body: { type: 'text', text: `wake hint: ${reason}` }, idempotency_key: key, metadata: { wake_hint: { reason, source, external_trigger_id: triggerId, idempotency_key: key } } }, tx.now);
    tx.emit('message_queued', { kind: 'system_tick', reason: 'wake_hint' });
  }

  // ---------------------------------------------------------------- work items

  private findWorkItem(doc: AgentDoc, id: string) {
    const item = doc.work_items.find((w) => w.id === id);
    if (!item) throw new DomainError('work_item_not_found', `work item ${id} not found`, { work_item_id: id });
    return item;
  }

  async createWorkItem(agentId: string, request: CreateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = CreateWorkItemRequest.parse(request);
    return this.mutate(agentId, async (tx) => workItemView(tx.doc, this.createWorkItemRecord(tx, req.objective)), options);
  }

  async updateWorkItem(agentId: string, workItemId: string, request: UpdateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = UpdateWorkItemRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      const item = this.findWorkItem(tx.doc, workItemId);
      if (item.state !== 'open') throw new DomainError('illegal_transition', `work item ${workItemId} is ${item.state}`);
      if (req.objective !== undefined) item.objective = req.objective;
      if (req.plan_status !== undefined) item.plan_status = req.plan_status;
      if (req.blocked_by !== undefined) item.blocked_by = req.blocked_by;
      item.revision += 1;
      item.updated_at = tx.now.toISOString();
      tx.emit('work_item_updated', { work_item_id: item.id, revision: item.revision });
      return workItemView(tx.doc, item);
    }, options);
  }

  async pickWorkItem(agentId: string, workItemId: string, request: PickWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = PickWorkItemRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      const item = this.findWorkItem(tx.doc, workItemId);
      if (item.state !== 'open') throw new DomainError('illegal_transition', `work item ${workItemId} is completed`);
      if (req.clear_blocker) {
        item.blocked_by = null;
        cancelOwnedWaits(tx, item.id, 'pick_work_item_clear_blocker');
      }
      tx.doc.state.current_work_item_id = item.id;
      item.updated_at = tx.now.toISOString();
      tx.emit('work_item_updated', { work_item_id: item.id, picked: true, reason: req.reason ?? null });
      return workItemView(tx.doc, item);
    }, options);
  }

  async completeWorkItem(agentId: string, workItemId: string, request: CompleteWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = CompleteWorkItemRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      const item = this.findWorkItem(tx.doc, workItemId);
      if (item.state === 'completed') return workItemView(tx.doc, item);
      this.completeWorkItemRecord(tx, item, req.report_text);
      return workItemView(tx.doc, item);
    }, options);
  }

  async listWorkItems(agentId: string): Promise<WorkItemView[]> {
    const doc = (await this.cell(agentId)).doc;
    return doc.work_items.map((w) => workItemView(doc, w));
  }

  async getWorkItem(agentId: string, workItemId: string): Promise<WorkItemView> {
    const doc = (await this.cell(agentId)).doc;
    return workItemView(doc, this.findWorkItem(doc, workItemId));
  }

  // ---------------------------------------------------------------- waits and timers

  async createWait(agentId: string, request: CreateWaitRequest, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    const req = CreateWaitRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      if (req.work_item_id) this.findWorkItem(tx.doc, req.work_item_id);
      if (req.wake === 'task_result' && !tx.doc.tasks.some((t) => t.id === req.resource)) throw new DomainError('task_not_found', `task ${req.resource} not found`);
      if (req.wake === 'timer' && !tx.doc.timers.some((t) => t.id === req.resource && t.status === 'active')) throw new DomainError('timer_not_found', `active timer ${req.resource} not found`);
      return this.createWaitRecord(tx, { wake: req.wake, reason: req.reason, ...(req.resource ? { resource: req.resource } : {}), ...(req.work_item_id ? { work_item_id: req.work_item_id } : {}), ...(req.wake_at ? { wake_at: req.wake_at } : {}) });
    }, options);
  }

  async cancelWait(agentId: string, waitId: string, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    return this.mutate(agentId, async (tx) => {
      const wait = tx.doc.waits.find((w) => w.id === waitId);
      if (!wait) throw new DomainError('wait_not_found', `wait ${waitId} not found`);
      if (isActiveWait(wait)) endWait(tx, wait, { status: 'cancelled', reason: 'cancelled_by_operator' });
      return wait;
    }, options);
  }

  async createTimer(agentId: string, request: CreateTimerRequest, options: MutationOptions = {}): Promise<TimerRecord> {
    const req = CreateTimerRequest.parse(request);
    return this.mutate(agentId, async (tx) => this.createTimerRecord(tx, { duration_ms: req.duration_ms, ...(req.interval_ms ? { interval_ms: req.interval_ms } : {}), ...(req.summary ? { summary: req.summary } : {}) }), options);
  }

  async cancelTimer(agentId: string, timerId: string, options: MutationOptions = {}): Promise<TimerRecord> {
    return this.mutate(agentId, async (tx) => {
      const timer = tx.doc.timers.find((t) => t.id === timerId);
      if (!timer) throw new DomainError('timer_not_found', `timer ${timerId} not found`);
      if (timer.status === 'completed') throw new DomainError('timer_completed', `timer ${timerId} already completed`);
      if (timer.status === 'active') this.cancelTimerRecord(tx, timer);
      return timer;
    }, options);
  }

  async listTimers(agentId: string): Promise<TimerRecord[]> {
    return (await this.cell(agentId)).doc.timers;
  }

  async getTimer(agentId: string, timerId: string): Promise<TimerRecord> {
    const timer = (await this.cell(agentId)).doc.timers.find((t) => t.id === timerId);
    if (!timer) throw new DomainError('timer_not_found', `timer ${timerId} not found`);
    return timer;
  }

  /** Fires a durable timer once per due time: the commit advances `next_fire_at`, so a replay is a no-op. */
  private async fireTimer(agentId: string, timerId: string, dueAt: string): Promise<void> {
    if (this.leaseLost || this.closing) return;
    let next: string | null = null;
    await this.mutate(agentId, async (tx) => {
      const timer = tx.doc.timers.find((t) => t.id === timerId);
      if (!timer || timer.status !== 'active' || timer.next_fire_at !== dueAt) return;
      const now = tx.now;
      timer.fire_count += 1;
      timer.last_fired_at = now.toISOString();
      if (timer.interval_ms) {
        timer.next_fire_at = new Date(Math.max(Date.parse(dueAt), now.getTime() - timer.interval_ms) + timer.interval_ms).toISOString();
        next = timer.next_fire_at;
      } else {
        timer.status = 'completed';
        timer.next_fire_at = null;
      }
      tx.emit('timer_fired', { timer_id: timerId, due_at: dueAt, fire_count: timer.fire_count });
      if (tx.doc.state.status === 'stopped') return;
      const wait = tx.doc.waits.find((w) => w.kind === 'timer' && w.subject_ref === timerId && w.status === 'active');
      if (wait) wait.status = 'triggered';
      admitMessage(tx.doc, { kind: 'timer_tick', origin: { kind: 'timer', timer_id: timerId }, authority_class: 'runtime_instruction', priority: 'next', body: { type: 'text', text: timer.summary ?? `timer ${timerId} fired` }, work_item_id: wait?.work_item_id ?? null, idempotency_key: `timer:${timerId}:${dueAt}` }, now);
      tx.emit('message_queued', { kind: 'timer_tick', timer_id: timerId });
    }, { allowTerminated: false });
    if (next) this.alarms.arm(agentId, timerId, next);
  }

  // ---------------------------------------------------------------- tasks API

  private findTask(doc: AgentDoc, taskId: string): TaskRecord {
    const task = doc.tasks.find((t) => t.id === taskId);
    if (!task) throw new DomainError('task_not_found', `task ${taskId} not found`, { task_id: taskId });
    return task;
  }

  /** Tasks need a live agent: a sleeping one is woken (seed 002 wake protocol) in the same operation. */
  private async wakeForTask(tx: Tx): Promise<void> {
    if (tx.doc.state.phase !== 'sleeping') return;
    tx.send({ type: 'WAKE', reason: 'task requested' }, { reason: 'task requested while asleep', trigger: 'user' });
    await this.drainEffects(tx);
  }

  async execCommand(agentId: string, request: ExecCommandRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    const req = ExecCommandRequest.parse(request);
    return new Promise((resolve, reject) => this.commandRequests.join(agentId, { req, resolve, reject, ...(options.idempotency ? { idempotency: options.idempotency } : {}) }));
  }

  /**
   * Records the ExecCommand requests that joined one operation. A request the agent refuses
   * (stopped, unknown work item) fails alone, before anything changes; a retried one (its
   * Idempotency-Key recorded) gets its task as recorded; the others share the wake, the commit,
   * and the launch that follows it.
   */
  private recordCommands(agentId: string, take: () => CommandRequest[]): void {
    let taken: CommandRequest[] | null = null;
    void this.mutate(agentId, async (tx) => {
      taken = take();
      const answers: Array<{ request: CommandRequest; task: TaskRecord; created: boolean }> = [];
      const fresh = taken.filter((request) => {
        try {
          const recorded = request.idempotency ? recordedAnswer(tx.doc, request.idempotency) : undefined;
          if (recorded && request.idempotency) {
            request.idempotency.replayed = true;
            answers.push({ request, task: recorded.value as TaskRecord, created: false });
            return false;
          }
          this.refuseStopped(tx);
          if (request.req.work_item_id) this.findWorkItem(tx.doc, request.req.work_item_id);
          return true;
        } catch (error) {
          request.reject(error);
          return false;
        }
      });
      if (fresh.length === 0) return answers;
      await this.wakeForTask(tx);
      if (tx.doc.state.phase !== 'active') throw new DomainError('illegal_transition', `agent ${agentId} is ${tx.doc.state.phase}: tasks start only while active`);
      for (const request of fresh) {
        const { req } = request;
        const task = this.createTaskRecord(tx, { summary: req.summary, cmd: req.cmd, accepts_input: req.accepts_input, ...(req.workdir ? { workdir: req.workdir } : {}), ...(req.timeout_ms ? { timeout_ms: req.timeout_ms } : {}), ...(req.work_item_id ? { work_item_id: req.work_item_id } : {}) }, null);
        if (req.env) this.taskEnv.set(task.id, req.env);
        if (request.idempotency) recordAnswer(tx.doc, request.idempotency, task, tx.now);
        answers.push({ request, task, created: true });
      }
      return answers;
    }, { pipelined: true }).then(
      (answers) => {
        for (const { request, task, created } of answers) {
          request.resolve(task);
          if (created) this.launchAfterCommit(agentId, task.id);
        }
      },
      (error: unknown) => {
        // Failed before it started (an unknown agent) or as a whole: every request it took fails.
        for (const request of taken ?? take()) request.reject(error);
      },
    );
  }

  /** InvokeAgent: an ActorInvocation task backed by a child agent whose turn result re-enters the parent. */
  async invokeAgent(agentId: string, request: InvokeAgentRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    const req = InvokeAgentRequest.parse(request);
    const parent = await this.cell(agentId);
    if (req.target_agent_id === agentId) throw new DomainError('forbidden', 'an agent cannot invoke itself');
    if (parent.doc.state.status === 'stopped') throw new DomainError('agent_stopped', `agent ${agentId} is stopped`);
    let childId = req.target_agent_id;
    if (childId) await this.cell(childId);
    else {
      // A retried invocation finds the child its first attempt created (the key names it).
      const childKey = options.idempotency ? { idempotency_key: `invoke:${agentId}:${options.idempotency.key}` } : {};
      childId = (await this.createAgent({ mission: req.summary, owner: agentId, config: { turn_runner: parent.doc.config.turn_runner, model: parent.doc.config.model } }, childKey)).agent.identity.agent_id;
    }
    const task = await this.mutate(agentId, async (tx) => {
      this.refuseStopped(tx);
      await this.wakeForTask(tx);
      if (tx.doc.state.phase !== 'active') throw new DomainError('illegal_transition', `agent ${agentId} is ${tx.doc.state.phase}: tasks start only while active`);
      const now = tx.now.toISOString();
      const task: TaskRecord = {
        id: newId('task'),
        agent_id: agentId,
        kind: 'actor_invocation',
        status: 'running',
        summary: req.summary,
        created_at: now,
        updated_at: now,
        work_item_id: null,
        parent_run_id: tx.doc.state.current_run_id,
        accepts_input: false,
        cmd: null,
        workdir: null,
        timeout_ms: null,
        exit_code: null,
        reason: null,
        child_agent_id: childId as string,
        output_bytes: 0,
        result_text: null,
      };
      appendRecord(tx.doc, 'tasks', task);
      tx.send({ type: 'TASK.SPAWN', taskId: task.id, kind: task.kind, acceptsInput: false }, { reason: 'invocation spawned', trigger: 'agent' });
      tx.tellChild(task.id, { type: 'START' });
      tx.emit('task_status_changed', { task_id: task.id, status: 'running', kind: task.kind, child_agent_id: childId });
      return task;
    }, options);
    await this.queueMessage(childId as string, {
      kind: 'internal_followup',
      origin: { kind: 'system', subsystem: 'invoke_agent' },
      authority_class: 'runtime_instruction',
      priority: 'next',
      body: { type: 'text', text: req.prompt },
      metadata: { invoked_by: { agent_id: agentId, task_id: task.id } },
    }, { idempotency: { key: `invoked_by:${task.id}`, fingerprint: `task:${task.id}` } });
    // Also on a retry: a first attempt that died before this point still gives the child its prompt, once.
    return task;
  }

  async listTasks(agentId: string): Promise<TaskRecord[]> {
    return (await this.cell(agentId)).doc.tasks.filter((t) => !isTerminalTask(t.status)).slice(0, 100);
  }

  async getTask(agentId: string, taskId: string): Promise<TaskRecord> {
    return this.findTask((await this.cell(agentId)).doc, taskId);
  }

  async taskOutput(agentId: string, taskId: string, query: TaskOutputQuery): Promise<TaskOutputResult> {
    const q = TaskOutputQuery.parse(query);
    const deadline = Date.now() + q.timeout_ms;
    const statusOf = async () => this.findTask((await this.cell(agentId)).doc, taskId).status;
    const queued = (await statusOf()) === 'queued' && !this.live.has(taskId);
    let retrieval: TaskOutputResult['retrieval_status'] = 'success';
    if (q.block) {
      // A queued task is waited for like a running one: until it starts (or ends), then for output
      // (all of it counts as new), then, if its process ended, until its result is recorded.
      if (queued) await this.untilTaskStatus(agentId, taskId, (status) => status !== 'queued', deadline);
      const live = this.live.get(taskId);
      if (live) {
        const outcome = await waitForOutput(live.handle, { sinceBytes: queued ? 0 : live.handle.outputBytes, timeoutMs: deadline - Date.now() });
        if (outcome === 'timeout') retrieval = 'timeout';
      }
      if (!this.live.has(taskId)) await this.untilTaskStatus(agentId, taskId, isTerminalTask, deadline);
    } else if (this.live.has(taskId) || queued) retrieval = 'not_ready';
    const task = this.findTask((await this.cell(agentId)).doc, taskId);
    const path = this.artifactPath(agentId, taskId);
    const bytes = await stat(path).then((s) => s.size).catch(() => 0);
    const stillLive = this.live.get(taskId);
    const preview = stillLive ? stillLive.handle.preview(q.max_bytes) : await readTail(path, q.max_bytes);
    if (!stillLive) retrieval = isTerminalTask(task.status) ? 'success' : q.block ? 'timeout' : 'not_ready';
    return {
      task_id: taskId,
      status: task.status,
      retrieval_status: retrieval,
      output_preview: preview,
      output_bytes: stillLive ? stillLive.handle.outputBytes : bytes,
      truncated: (stillLive ? stillLive.handle.outputBytes : bytes) > Buffer.byteLength(preview),
      exit_code: task.exit_code,
      artifact: { path: `artifacts/${agentId}/${taskId}.log`, bytes },
    };
  }

  /** Waits until the task's committed status satisfies `reached`, or `deadline` (epoch ms) passes. */
  private async untilTaskStatus(agentId: string, taskId: string, reached: (status: TaskRecord['status']) => boolean, deadline: number): Promise<void> {
    const now = () => {
      const status = this.cells.get(agentId)?.doc.tasks.find((t) => t.id === taskId)?.status;
      return status === undefined || reached(status);
    };
    const moved = (event: AgentEvent) => event.type === 'task_status_changed' && event.payload['task_id'] === taskId && reached(event.payload['status'] as TaskRecord['status']);
    await this.bus.until(agentId, moved, deadline - Date.now(), now);
  }

  async taskArtifact(agentId: string, taskId: string): Promise<Readable> {
    const cell = await this.cell(agentId);
    this.findTask(cell.doc, taskId);
    const path = this.artifactPath(agentId, taskId);
    await stat(path).catch(() => {
      throw new DomainError('task_not_found', `task ${taskId} has no output artifact yet`);
    });
    return createReadStream(path);
  }

  async taskInput(agentId: string, taskId: string, request: TaskInputRequest, options: MutationOptions = {}): Promise<TaskInputResult> {
    const req = TaskInputRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      const task = this.findTask(tx.doc, taskId);
      const live = this.live.get(taskId);
      if (!task.accepts_input || task.status !== 'running' || !live) {
        throw new DomainError('task_not_accepting_input', `task ${taskId} does not accept input (accepts_input=${task.accepts_input}, status=${task.status})`);
      }
      const bytes = await live.handle.write(req.text);
      tx.tellChild(taskId, { type: 'INPUT' });
      tx.emit('task_input', { task_id: taskId, bytes });
      return { task, accepted_input: true, bytes_written: bytes };
    }, options);
  }

  async stopTask(agentId: string, taskId: string, options: MutationOptions = {}): Promise<TaskStopResult> {
    let force = false;
    const task = await this.mutate(agentId, async (tx) => {
      const task = this.findTask(tx.doc, taskId);
      if (isTerminalTask(task.status)) return task;
      const live = this.live.get(taskId);
      if (task.status === 'cancelling') force = true;
      if (!live) {
        tx.tellChild(taskId, { type: 'STOP' });
        this.finishTaskRecord(tx, task, { status: 'cancelled', exit_code: null, reason: 'stopped' });
        return task;
      }
      task.status = 'cancelling';
      task.updated_at = tx.now.toISOString();
      tx.tellChild(taskId, { type: 'STOP' });
      tx.emit('task_status_changed', { task_id: taskId, status: 'cancelling', force });
      void live.handle.stop();
      return task;
    }, { ...options, allowTerminated: true });
    return { task, stop_requested: true, force_stop_requested: force };
  }

  // ---------------------------------------------------------------- triggers

  async createTrigger(agentId: string, request: CreateTriggerRequest, options: MutationOptions = {}): Promise<TriggerCapability> {
    const req = CreateTriggerRequest.parse(request);
    return this.mutate(agentId, async (tx) => {
      this.refuseStopped(tx);
      return this.provisionTrigger(tx, req.delivery_mode, false);
    }, { ...options, recordAs: withoutToken });
  }

  async revokeTrigger(agentId: string, triggerId: string, options: MutationOptions = {}): Promise<ExternalTriggerSummary> {
    return this.mutate(agentId, async (tx) => {
      const trigger = tx.doc.triggers.find((t) => t.id === triggerId);
      if (!trigger) throw new DomainError('trigger_not_found', `trigger ${triggerId} not found`);
      if (trigger.status === 'active') this.revokeTriggerRecord(tx, trigger);
      return triggerSummary(trigger);
    }, options);
  }

  async resetCallback(agentId: string, options: MutationOptions = {}): Promise<TriggerCapability> {
    return this.mutate(agentId, async (tx) => {
      this.refuseStopped(tx);
      for (const trigger of tx.doc.triggers) if (trigger.is_default && trigger.status === 'active') this.revokeTriggerRecord(tx, trigger);
      return this.provisionTrigger(tx, 'wake_hint', true);
    }, { ...options, recordAs: withoutToken });
  }

  async deliverCallback(mode: 'wake_hint' | 'enqueue_message', token: string, body: CallbackBody): Promise<CallbackResult> {
    const found = await this.findTrigger(token);
    if (!found || found.trigger.status !== 'active' || found.trigger.delivery_mode !== mode) {
      throw new DomainError('forbidden', 'invalid callback capability');
    }
    const { agentId, trigger } = found;
    const deliveryId = newId('dlv');
    const text = callbackText(body);
    // The delivery is recorded in the commit that delivers it.
    const delivery = { triggerId: trigger.id, deliveryId };
    if (mode === 'wake_hint') {
      const result = await this.submitWakeHint(agentId, text.slice(0, 160) || 'external trigger fired', 'callback', trigger.id, delivery);
      return { agent_id: agentId, delivery_id: deliveryId, external_trigger_id: trigger.id, delivery_mode: mode, disposition: result.disposition };
    }
    const accepted = await this.queueMessage(agentId, {
      kind: 'callback_event',
      origin: { kind: 'callback', descriptor_id: trigger.id, source: 'capability_url' },
      authority_class: 'integration_signal',
      priority: 'normal',
      body: text ? { type: 'text', text } : null,
      metadata: { delivery_id: deliveryId, content_type: body.content_type },
    }, {}, delivery);
    return { agent_id: agentId, delivery_id: deliveryId, external_trigger_id: trigger.id, delivery_mode: mode, disposition: 'enqueued', message_id: accepted.message_id };
  }

  private recordDelivery(tx: Tx, { triggerId, deliveryId }: Delivery, disposition: string): void {
    const trigger = tx.doc.triggers.find((t) => t.id === triggerId);
    if (!trigger) return;
    // Replaced, not edited: a message's shallow draft shares the head's triggers.
    const delivered = { ...trigger, delivery_count: trigger.delivery_count + 1, last_delivered_at: tx.now.toISOString() };
    tx.doc.triggers = tx.doc.triggers.map((t) => (t === trigger ? delivered : t));
    tx.emit('callback_delivered', { delivery_id: deliveryId, external_trigger_id: triggerId, disposition });
  }

  /** The roster indexes every agent's active token hashes, so a capability finds its agent unloaded. */
  private async findTrigger(token: string): Promise<{ agentId: string; trigger: ExternalTriggerRecord } | null> {
    const agentId = this.roster.agentForTokenHash(hashToken(token));
    const cell = agentId ? await this.loadCell(agentId) : null;
    // The map lookup narrows; the stored hash is still compared in constant time.
    const trigger = cell?.doc.triggers.find((t) => tokenMatches(token, t.token_hash));
    return cell && trigger ? { agentId: cell.id, trigger } : null;
  }

  // ---------------------------------------------------------------- events

  async eventsPage(agentId: string, query: EventsQuery): Promise<EventsPage> {
    const q = EventsQuery.parse(query);
    await this.cell(agentId);
    const page = await this.store.readEvents(agentId, { ...(q.after_seq !== undefined ? { after_seq: q.after_seq } : {}), ...(q.before_seq !== undefined ? { before_seq: q.before_seq } : {}), limit: q.limit, order: q.order });
    const seqs = page.events.map((e) => e.event_seq);
    const min = seqs.length ? Math.min(...seqs) : 0;
    const max = seqs.length ? Math.max(...seqs) : 0;
    return {
      events: page.events,
      oldest_seq: page.oldest_seq,
      newest_seq: page.newest_seq,
      cursor_seq: q.order === 'asc' ? max || (q.after_seq ?? 0) : min || (q.before_seq ?? 0),
      has_older: seqs.length > 0 ? min > page.oldest_seq : false,
      has_newer: seqs.length > 0 ? max < page.newest_seq : false,
    };
  }

  subscribe(agentId: string | null, listener: (event: AgentEvent) => void): () => void {
    return this.bus.subscribe(agentId, listener);
  }

  // ---------------------------------------------------------------- turn workers

  async claimTurn(request: ClaimTurnRequest, signal?: AbortSignal, options: Pick<MutationOptions, 'idempotency'> = {}): Promise<TurnClaim | null> {
    const req = ClaimTurnRequest.parse(request);
    return this.offers.claim(req.agent_ids ?? null, req.wait_ms, signal, options.idempotency);
  }

  async heartbeatTurn(runId: string, request: HeartbeatTurnRequest): Promise<{ run_id: string; claim_id: string; lease_expires_at: string }> {
    const req = HeartbeatTurnRequest.parse(request);
    return { run_id: runId, claim_id: req.claim_id, lease_expires_at: this.offers.heartbeat(runId, req.claim_id) };
  }

  async completeTurn(runId: string, request: CompleteTurnRequest, options: MutationOptions = {}): Promise<{ run_id: string; applied: boolean }> {
    const { claim_id: claimId, ...result } = CompleteTurnRequest.parse(request);
    // A retried completion (same Idempotency-Key) of a claim that completed is answered from the agent's records.
    const completed = options.idempotency ? this.offers.completedBy(runId, claimId) : null;
    const agentId = completed ?? this.offers.complete(runId, claimId).agent_id;
    return this.mutate(agentId, async (tx) => {
      if (completed !== null) throw new DomainError('lease_lost', `turn ${runId} was completed already under claim ${claimId}`);
      if (tx.doc.state.current_run_id !== runId) throw new DomainError('stale_run_id', `run ${runId} is no longer current`);
      this.finishTurn(tx, runId, result);
      return { run_id: runId, applied: true };
    }, options);
  }

  // ---------------------------------------------------------------- introspection

  async actorTree(agentId: string): Promise<ActorNodeShape> {
    const cell = await this.cell(agentId);
    const chart = statechartOf(cell);
    return {
      id: `agent:${agentId}`,
      machine: 'agent',
      state: chart['agent'] ?? null,
      children: Object.entries(chart)
        .filter(([id]) => id !== 'agent')
        .map(([id, state]) => ({ id, machine: id === 'continuation' ? 'continuation' : 'task', state, children: [] })),
    };
  }

  async inspect(agentId: string, listener: InspectionListener): Promise<() => void> {
    await this.cell(agentId);
    return this.inspection.watch(agentId, listener);
  }

  async acceptedEvents(agentId: string): Promise<AgentAccepts> {
    return agentAccepts(await this.cell(agentId));
  }

  async readiness(): Promise<Readiness> {
    let storeOk = true;
    let lease: Lease | null = null;
    try {
      lease = await this.store.readLease();
    } catch {
      storeOk = false;
    }
    const held = !this.leaseLost && lease !== null && lease.holder === this.nodeId && Date.parse(lease.expires_at) > this.clock.now().getTime();
    const stalled = [...this.cells.values()].filter((c) => c.doc.state.current_run_id && Date.parse(c.doc.last_commit_at) < this.clock.now().getTime() - 5 * 60_000).map((c) => c.id);
    return {
      ok: storeOk && held,
      process: { pid: process.pid, uptime_s: Math.round(process.uptime()) },
      lease: { held, holder: lease?.holder ?? null, expires_at: lease?.expires_at ?? null, fencing_token: lease?.fencing_token ?? 0 },
      dependencies: { store: { ok: storeOk, kind: this.store.kind } },
      progress: { last_commit_at: this.lastCommitAt, stalled_agents: stalled, stranded_agents: this.roster.stranded() },
    };
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.alarms.disarmAll();
    this.dueAgents.disarmAll();
    this.offers.close();
    for (const controller of this.runs.values()) controller.abort();
    // Settle every lane, then stop processes: their tasks become interrupted on the next start.
    await Promise.all([...this.cells.values()].map((cell) => cell.run(async () => undefined).catch(() => undefined)));
    await Promise.all([...this.live.values()].map((task) => task.handle.stop().catch(() => undefined)));
    this.live.clear();
    // The supervisors drain: they refuse new agents while every live one is detached, then stop.
    for (const shard of this.shards) shard.send({ type: 'SHUTDOWN' });
    for (const cell of this.cells.values()) cell.passivate();
    for (const shard of this.shards) shard.send({ type: 'DRAINED' });
    if (this.lease && !this.leaseLost) await this.store.releaseLease(this.lease).catch(() => undefined);
    await this.store.close();
  }
}

/** A capability as an idempotency record keeps it: the token is shown once, never stored. */
function withoutToken(capability: TriggerCapability): TriggerCapability {
  return { ...capability, token: '' };
}

/** The AgentSummary of the agent as the operation leaves it (its draft and live actor). */
function draftSummary(tx: Tx): AgentSummary {
  tx.syncMachine();
  return assembleSummary({ doc: tx.doc, actor: tx.cell.actor });
}

/** A command task whose process runs (or is being stopped): what `maxRunningTasks` bounds. */
function isRunningCommand(task: TaskRecord): boolean {
  return task.cmd !== null && (task.status === 'running' || task.status === 'cancelling');
}

function callbackText(body: CallbackBody): string {
  if (body.body.length === 0) return '';
  const type = (body.content_type ?? '').toLowerCase();
  if (type.includes('json') || type.startsWith('text/') || type === '') return body.body.toString('utf8').trim();
  return JSON.stringify({ content_type: body.content_type, body_base64: body.body.toString('base64') });
}

async function readTail(path: string, maxBytes: number): Promise<string> {
  const { open } = await import('node:fs/promises');
  const handle = await open(path, 'r').catch(() => null);
  if (!handle) return '';
  try {
    const size = (await handle.stat()).size;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString('utf8').replace(/^[\u0080-\u00bf]+/, '');
  } finally {
    await handle.close();
  }
}
