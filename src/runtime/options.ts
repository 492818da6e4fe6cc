import type { InspectionEvent } from 'xstate';
import type { Store } from '../store/store.js';
import type { Clock } from './clock.js';
import type { TurnRunner } from './runners/turn-runner.js';

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
   * The most messages one turn takes (issue 18, "a turn drains what it may"): at its start the
   * queued messages that may share it (`mayJoinTurn`), and at its safe points the operator
   * interjections that arrive, together up to this bound. 1 gives a turn per message.
   * @default 64
   */
  turnMaxMessages?: number;
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
   * Messages one agent's inbox may hold pending (queued and not yet claimed by a turn, plus inputs
   * accepted and not yet answered). A prompt, enqueue, callback or wake hint beyond it is refused
   * with 429 `inbox_full` and `Retry-After`, and nothing is recorded.
   * @default 1_000
   * @example inboxMaxMessages: 64
   */
  inboxMaxMessages?: number;
  /**
   * Bytes of body text (UTF-8; a JSON body rendered) one agent's pending messages may hold
   * together; beyond it, 429 `inbox_full` as for `inboxMaxMessages`.
   * @default 8_388_608 (8 MiB)
   * @example inboxMaxBytes: 1_048_576
   */
  inboxMaxBytes?: number;
  /**
   * Inputs (prompts, enqueues, callbacks, wake hints) the whole runtime may have accepted and not
   * yet answered (not yet durable): when the runtime as a whole falls behind, the next input to
   * any agent is refused with 429 `inbox_full` (`details.scope: 'process'`).
   * @default 10_000
   * @example ingressMaxInFlight: 2_000
   */
  ingressMaxInFlight?: number;
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

/** An injected effect failure (RuntimeOptions.faults). */
export interface EffectFault {
  reason: string;
  recoverable?: boolean;
}


/** The options every part of the runtime reads, defaults applied. */
export interface ResolvedOptions {
  dataDir: string;
  leaseTtlMs: number;
  leaseWaitMs: number;
  killGraceMs: number;
  maxRunningTasks: number;
  turnLeaseMs: number;
  turnMaxMessages: number;
  shardCapacity: number;
  residentQuietAgents: number;
  effectTimeoutMs: number;
  inboxMaxMessages: number;
  inboxMaxBytes: number;
  ingressMaxInFlight: number;
  inspect?: RuntimeOptions['inspect'];
  faults?: RuntimeOptions['faults'];
}

/** The defaults of {@link RuntimeOptions}, applied; `dataDir` is where the lowdb store really is. */
export function resolveOptions(options: RuntimeOptions, store: Store, dataDir: string): ResolvedOptions {
  return {
    dataDir: store.kind === 'lowdb' ? store.location : dataDir,
    leaseTtlMs: options.leaseTtlMs ?? 10_000,
    leaseWaitMs: options.leaseWaitMs ?? 0,
    killGraceMs: options.killGraceMs ?? 2_000,
    maxRunningTasks: options.maxRunningTasks ?? 128,
    turnLeaseMs: options.turnLeaseMs ?? 30_000,
    turnMaxMessages: options.turnMaxMessages ?? 64,
    shardCapacity: options.shardCapacity ?? 1_000,
    residentQuietAgents: options.residentQuietAgents ?? 1_000,
    effectTimeoutMs: options.effectTimeoutMs ?? 10_000,
    inboxMaxMessages: options.inboxMaxMessages ?? 1_000,
    inboxMaxBytes: options.inboxMaxBytes ?? 8_388_608,
    ingressMaxInFlight: options.ingressMaxInFlight ?? 10_000,
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.faults ? { faults: options.faults } : {}),
  };
}
