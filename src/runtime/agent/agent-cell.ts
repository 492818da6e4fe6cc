import { createActor, type Actor, type InspectionEvent } from 'xstate';
import type { agentMachine, AgentEmitted } from '../../../machines/index.js';
import { AgentDoc } from './agent-doc.js';
import { Tx, type TxEnv } from './tx.js';

export type AgentLogic = typeof agentMachine;
export type AgentActor = Actor<AgentLogic>;
export type EffectRequest = AgentEmitted;

/** What a cell needs from its runtime (and its Tx: store, clock, bus, fencing token, commit outcomes). */
export interface CellEnv extends TxEnv {
  logic: AgentLogic;
  /** Observes every XState inspection event of every agent actor (`serve --inspect-log`). */
  inspect?: (event: InspectionEvent) => void;
  /** Tells the agent's shard supervisor that a live actor appeared or went away. */
  attached(agentId: string, actor: AgentActor): void;
  detached(agentId: string): void;
  /** The cell's lane ran everything queued: a chance to retire it. */
  settled(cell: AgentCell): void;
  /** The agent's current cell, for operations that reach a retired one. */
  reload(agentId: string): Promise<AgentCell>;
}

/** A commit handed to the store and not yet durable. */
interface Issued {
  doc: AgentDoc;
  version: number;
  /** Settles once the store answered (and the commit's effects ran). */
  durable: Promise<unknown>;
}

/** An operation that ran: its answer, and its commit becoming durable. */
interface Slot<T> {
  result: T;
  durable: Promise<unknown>;
}

/** How an operation may share the lane. */
export interface RunOptions {
  /**
   * The operation touches nothing outside the agent's records and memory before its commit (its
   * effects are `onCommit` ones), so it may start before the commits issued ahead of it are
   * durable: at once, on the lane's head. For inputs (a message queued, a wake hint, a turn's
   * result). Default `false` (see `durableBefore`).
   */
  pipelined?: boolean;
  /**
   * For an operation that is not `pipelined`: which earlier commits must be durable before it starts.
   *  - `'start'` (default): every commit issued before it starts, waited for in the lane (the lane
   *    waits with it), so its body sees only durable state: it may act outside the agent's records
   *    (spawn or kill a process, write to one) before its commit.
   *  - `'asked'`: the commits issued before it was asked (`run` called), waited for outside the
   *    lane; then it joins the lane and builds on the head, durable or not, without waiting again.
   *    Operations asked meanwhile pass it while it waits (inputs are never held behind its fsync
   *    wait), and it cannot starve behind them (their newer commits are not waited for). What it
   *    finds beyond what it was asked after (inputs that slipped in) is not durable yet, so its
   *    body must not act outside the agent's records on it: its effects are `onCommit` ones, which
   *    run after its commit, ordered after theirs; a body that must act outside first awaits
   *    `cell.whenDurable()` (as `Lifecycle`'s stop does). For the scheduler's steps.
   * `'asked'` operations join the lane in the order asked; a `'start'` operation asked while one
   * waits joins after it.
   */
  durableBefore?: 'start' | 'asked';
  /**
   * The operation changes only top-level fields of the document and `state`'s fields, and
   * replaces any other record or list it changes (never edits one in place): its draft copies the
   * head's top level and `state`, and shares the rest (no deep copy, nothing to put back before
   * the commit). For the hot, narrow operations (a message queued). Default `false`: a draft the
   * operation may edit anywhere (`copyDoc`).
   * @example cell.run((tx) => { admitMessage(tx.doc, message, tx.now); }, { pipelined: true, shallow: true })
   */
  shallow?: boolean;
}

/**
 * One agent: its committed document, its live actor (absent while passivated), and a lane that
 * runs its operations one at a time. Each operation works on a draft (`Tx`) and commits it.
 *
 * The lane is pipelined: an operation's final commit is handed to the store and the lane goes
 * on while the store makes it durable (its group commit folds the commits of many operations and
 * agents into one fsync); a `pipelined` operation starts at once, on that draft, and a
 * `durableBefore: 'asked'` one (a scheduler step) waits outside the lane for what was issued
 * before it was asked, then starts on the head, durable or not. Each caller is answered, and
 * each commit's effects run, only once its commit is durable, in order. `doc` and `version` are
 * the durable state, which readers see; the lane builds on `head`.
 */
export class AgentCell {
  actor: AgentActor | null = null;
  private lane: Promise<unknown> = Promise.resolve();
  private effects: EffectRequest[] = [];
  /** Operations queued, running, or waiting for their commit to be durable. */
  private queued = 0;
  private retired = false;
  /** The newest commit issued and not yet durable. */
  private issued: Issued | null = null;
  /** `durableBefore: 'asked'` operations waiting to join the lane, and when the last of them has joined. */
  private waiting = 0;
  private joined: Promise<void> = Promise.resolve();
  /** The JSON of the roster entry in effect after the newest issued commit (`undefined`: unknown, the next commit carries one). */
  rosterJson: string | undefined;

  constructor(
    readonly id: string,
    public doc: AgentDoc,
    public version: number,
    private readonly env: CellEnv,
  ) {}

  /** The document the lane builds on: the newest issued, durable or not. */
  get head(): AgentDoc {
    return this.issued?.doc ?? this.doc;
  }

  get headVersion(): number {
    return this.issued?.version ?? this.version;
  }

  /** Settles once every commit issued so far is durable (or failed). */
  whenDurable(): Promise<unknown> {
    return this.issued?.durable ?? Promise.resolve();
  }

  /**
   * Runs `operation` in the agent's lane (after the operations ahead of it there; see
   * `RunOptions` for when it joins); a failure rolls the actor back.
   */
  run<T>(operation: (tx: Tx) => Promise<T>, options: RunOptions = {}): Promise<T> {
    this.queued += 1;
    let issued: Promise<Slot<T>>;
    if (options.pipelined) {
      issued = this.enter(operation, options, false);
    } else if (options.durableBefore === 'asked') {
      // Waits, outside the lane, for what was issued before it was asked only.
      const gate = this.whenDurable();
      this.waiting += 1;
      const joined = Promise.all([this.joined, gate]).then(() => {
        this.waiting -= 1;
        return { slot: this.enter(operation, options, false) };
      });
      this.joined = joined.then(() => undefined);
      issued = joined.then(({ slot }) => slot);
    } else if (this.waiting > 0) {
      // Behind an `'asked'` operation still waiting to join: joins after it.
      issued = this.joined.then(() => this.enter(operation, options, true));
    } else {
      issued = this.enter(operation, options, true);
    }
    const done = issued.then(({ result, durable }) => durable.then(() => result));
    const settle = () => {
      this.queued -= 1;
      if (this.queued === 0 && !this.retired) this.env.settled(this);
    };
    done.then(settle, settle);
    return done;
  }

  /** Appends `operation` to the lane now; `waitDurable`: it starts once every commit issued before is durable. */
  private enter<T>(operation: (tx: Tx) => Promise<T>, options: RunOptions, waitDurable: boolean): Promise<Slot<T>> {
    const issued = this.lane.then(async (): Promise<Slot<T>> => {
      // Queued behind this cell's retirement: the agent's records live in a fresh cell now.
      if (this.retired) return { result: await (await this.env.reload(this.id)).run(operation, options), durable: Promise.resolve() };
      if (waitDurable) await this.whenDurable();
      const tx = new Tx(this, this.env, options.shallow ?? false);
      try {
        const result = await operation(tx);
        // Not awaited here: the next operation may start while this commit becomes durable.
        return { result, durable: tx.finish() };
      } catch (error) {
        this.rollback();
        throw error;
      }
    });
    this.lane = issued.catch(() => undefined);
    return issued;
  }

  /**
   * Hands a commit of `doc` (built on `version - 1`) to `write` and makes it the lane's head;
   * `committed` runs once it is durable. When the store refuses it, the lane falls back to the
   * durable state: the actor restarts from it, and the commits issued on top of the refused one
   * fail too (their base version is gone).
   */
  issue<R>(doc: AgentDoc, version: number, rosterJson: string, write: () => Promise<R>, committed: (result: R) => void): Promise<R> {
    const entry: Issued = { doc, version, durable: Promise.resolve() };
    const durable = write().then(
      (result) => {
        if (this.issued === entry) this.issued = null;
        this.commitDone(doc, version);
        committed(result);
        return result;
      },
      (error: unknown) => {
        if (this.issued === entry) this.issued = null;
        this.rosterJson = undefined;
        this.passivate();
        throw error;
      },
    );
    entry.durable = durable.catch(() => undefined);
    this.issued = entry;
    this.rosterJson = rosterJson;
    return durable;
  }

  /**
   * Ends this cell in its lane, after every operation queued before, if nothing was queued
   * after and `quiet` still holds: `retired` runs (in the same turn, so no one
   * finds this cell afterwards), and later operations go to a fresh cell loaded from the store.
   */
  retire(quiet: (cell: AgentCell) => boolean, retired: () => void): Promise<void> {
    const next = this.lane.then(() => {
      if (this.retired || this.queued > 0 || !quiet(this)) return;
      this.retired = true;
      retired();
    });
    this.lane = next.catch(() => undefined);
    return next;
  }

  /** The live actor, rehydrated from the committed machine snapshot when passivated. */
  ensureActor(): AgentActor {
    if (this.actor) return this.actor;
    // A root actor per agent: XState cannot spawn a child from a persisted snapshot, and a child
    // cannot be stopped (passivated) on its own. The shard supervisor is told instead.
    const machine = this.head.machine;
    const options = {
      id: this.id,
      systemId: `agent:${this.id}`,
      input: { agentId: this.id },
      ...(machine ? { snapshot: machine as never } : {}),
      ...(this.env.inspect ? { inspect: this.env.inspect } : {}),
    };
    const actor = createActor(this.env.logic, options);
    actor.on('effect.requested', (effect) => this.effects.push(effect));
    actor.start();
    this.actor = actor;
    this.env.attached(this.id, actor);
    return actor;
  }

  takeEffects(): EffectRequest[] {
    const effects = this.effects;
    this.effects = [];
    return effects;
  }

  /** Sleeping holds no compute (seed 002 invariant 4): the actor goes, its snapshot stays. */
  passivate(): void {
    if (!this.actor) return;
    this.actor.stop();
    this.actor = null;
    this.effects = [];
    this.env.detached(this.id);
  }

  /** The draft is discarded; the actor restarts from the last committed snapshot. */
  private rollback(): void {
    this.passivate();
  }

  commitDone(doc: AgentDoc, version: number): void {
    this.doc = doc;
    this.version = version;
  }
}

export function parseDoc(raw: unknown): AgentDoc {
  return AgentDoc.parse(raw);
}
