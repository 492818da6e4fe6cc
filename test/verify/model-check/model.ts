import type { AnyStateMachine } from 'xstate';
import { emptyFacts, type SchedulerFacts } from '../../../src/domain/index.js';
import { agentPhase, modelMachines, type ModelMachines } from './machines.js';

/**
 * The composed system of seed 002, abstracted: two agents (A, B) with two task slots each, two
 * runtime instances (R1, R2) on one store, and one write lease with a fencing token. The agent,
 * task, continuation and supervisor parts are the real machines (interned snapshot ids); the
 * documents, the store, the lease and the host's processes are this file's abstraction of
 * `AgentDoc`, the Store port and `child_process`.
 */
export const AGENTS = ['A', 'B'] as const;
export const INSTANCES = ['R1', 'R2'] as const;
export const TASK_SLOTS = 2;

/** The `start_command` effect of a task slot (the effects ledger). */
export type EffectStatus = 'none' | 'started' | 'done' | 'in_doubt';

export interface TaskRec {
  /** Interned task machine snapshot; -1: the slot holds no task. */
  m: number;
  e: EffectStatus;
}

/** The latest recovery point (`doc.snapshots.at(-1)`): the memory version it holds, and whether it verifies. */
export interface RecoveryPoint {
  m: number;
  intact: boolean;
  schemaOk: boolean;
}

/**
 * What the last entry into Active rested on (seed 002 invariant 3): `verified` (the initial
 * snapshot, or a recovery point a wake or a recovery verified), `unverified`, or nothing yet
 * (`none`). `asleep`: the agent went to sleep since, so leaving sleep must verify again.
 */
export type Basis = 'none' | 'verified' | 'asleep' | 'unverified';

export interface Doc {
  /** Interned agent machine snapshot. */
  a: number;
  /** Interned continuation machine snapshot. */
  c: number;
  t: TaskRec[];
  /** Queued messages (capped at 2). */
  q: number;
  /** Memory version: every finished turn writes working memory (capped by the bound). */
  m: number;
  snap: RecoveryPoint | null;
  basis: Basis;
  /** The default external trigger is active (a run permission). */
  trg: boolean;
  /** `doc.refusal`: the last wake was refused for an incompatible schema. */
  refused: boolean;
  /** The phase an open transitional protocol started from (`pending_transition.from_phase`). */
  pendFrom: string | null;
}

/** One agent in the store: its committed document and the digest of its transition log. */
export interface Entry {
  doc: Doc;
  /** `to_state` of the last `transition_committed` event. */
  chainEnd: string;
  /** Some transition did not start where the one before ended, or a state change has no record. */
  gap: boolean;
}

export interface Lease {
  /** Holder instance index, -1 for none. */
  h: number;
  tok: number;
  /** Unexpired (the store has no clock: expiry lets another instance acquire, it fences no one). */
  live: boolean;
}

export interface Cell {
  /** The document as this instance last committed or loaded it. */
  doc: Doc;
  /** No other instance committed this agent since (a compare-and-set from here succeeds). */
  fresh: boolean;
  /** A live agent actor (attached to a shard) rather than a passivated snapshot. */
  actor: boolean;
  shard: number;
  /** Effects an operation requested and will perform after its mid-way commit (a flush); its lane runs nothing else meanwhile. */
  pending: string[];
}

export interface Instance {
  up: boolean;
  /** The fencing token this instance acquired, -1 for none. */
  tok: number;
  /** Learned the lease is gone: writes nothing, performs no side effect (`onLeaseLost`). */
  lost: boolean;
  cells: Array<Cell | null>;
  /** A turn runs here for the agent. */
  runs: boolean[];
  /** Task slots whose creation committed here and whose launch is still to come. */
  launches: boolean[][];
  /** Interned supervisor snapshots of this instance's shards. */
  shards: number[];
}

/** What is left of the bounds: crashes are the system's, the rest each agent's. */
export interface Budget {
  crashes: number;
  failures: number[];
  corruptions: number[];
  schemaChanges: number[];
}

export interface ModelState {
  lease: Lease;
  store: Array<Entry | null>;
  inst: Instance[];
  /** Per agent and task slot: the instance whose process runs it (processes outlive a crash), -1 none. */
  procs: number[][];
  budget: Budget;
}

/** How far the exploration goes. */
export interface Bounds {
  /** Agents (1 or 2). */
  agents: number;
  /** Highest fencing token (each takeover raises it by one). */
  maxToken: number;
  crashes: number;
  /** Memory versions per agent (turns that write memory). */
  memory: number;
  /** Tasks each agent may create (≤ TASK_SLOTS). */
  tasks: number;
  /** Agent actors that throw (supervisor AGENT.FAILED → Recovering). */
  failures: number;
  /** Recovery points corrupted on disk. */
  corruptions: number;
  /** Recovery points found in another schema version (an upgrade). */
  schemaChanges: number;
}

export const CI_BOUNDS: Bounds = { agents: 2, maxToken: 2, crashes: 1, memory: 1, tasks: 1, failures: 0, corruptions: 1, schemaChanges: 1 };
/** The CI bound with the second task of each agent: two agents, two tasks each. */
export const DEEP_BOUNDS: Bounds = { ...CI_BOUNDS, tasks: 2 };

/** Deliberate bugs: each one breaks an invariant, and the checker must find it. */
export interface Faults {
  /** Commits skip the fencing-token check (a fenced instance still writes). */
  skipFencing?: boolean;
  /** Commits skip the expected-version compare-and-set (a stale copy overwrites). */
  skipCompareAndSet?: boolean;
  /** Waking skips the snapshot verification. */
  skipWakeVerification?: boolean;
  /** Recovery restores the memory of the latest recovery point instead of the committed records. */
  recoverFromSnapshot?: boolean;
  /** Going to sleep keeps the actor live. */
  keepActorAsleep?: boolean;
  /** Termination leaves the external trigger active. */
  keepTriggerOnTerminate?: boolean;
  /** Boot recovery ends an interrupted turn without recording the transition. */
  unrecordedRecovery?: boolean;
  /** Operations on a terminated agent are not refused (`mutate` lets them through). */
  acceptTerminated?: boolean;
  /** Launching a command does not check the lease first. */
  launchWithoutLeaseCheck?: boolean;
}

export interface Model {
  machines: ModelMachines;
  bounds: Bounds;
  faults: Faults;
}

export function createModel(bounds: Bounds, faults: Faults = {}, machineOverrides: Partial<Record<keyof ModelMachines, AnyStateMachine>> = {}): Model {
  return { machines: modelMachines(machineOverrides), bounds, faults };
}

/** An instance that is not running: it holds nothing. */
export function downInstance(agents: number): Instance {
  const each = <T>(make: () => T): T[] => Array.from({ length: agents }, make);
  return { up: false, tok: -1, lost: false, cells: each(() => null), runs: each(() => false), launches: each(() => Array(TASK_SLOTS).fill(false)), shards: [] };
}

export function initialState(model: Model): ModelState {
  const agents = AGENTS.slice(0, model.bounds.agents);
  return {
    lease: { h: -1, tok: 0, live: false },
    store: agents.map(() => null),
    inst: INSTANCES.map(() => downInstance(model.bounds.agents)),
    procs: agents.map(() => Array(TASK_SLOTS).fill(-1)),
    budget: { crashes: model.bounds.crashes, failures: agents.map(() => model.bounds.failures), corruptions: agents.map(() => model.bounds.corruptions), schemaChanges: agents.map(() => model.bounds.schemaChanges) },
  };
}

export function cloneDoc(d: Doc): Doc {
  return { a: d.a, c: d.c, t: d.t.map((t) => ({ m: t.m, e: t.e })), q: d.q, m: d.m, snap: d.snap && { m: d.snap.m, intact: d.snap.intact, schemaOk: d.snap.schemaOk }, basis: d.basis, trg: d.trg, refused: d.refused, pendFrom: d.pendFrom };
}

/**
 * A copy for one step (hand-written: the explorer copies a state for every step it tries).
 * Documents are immutable, as the runtime's committed ones are: a step replaces a document,
 * never edits one, so copies share them.
 */
export function cloneState(s: ModelState): ModelState {
  return {
    lease: { h: s.lease.h, tok: s.lease.tok, live: s.lease.live },
    store: s.store.map((e) => e && { doc: e.doc, chainEnd: e.chainEnd, gap: e.gap }),
    inst: s.inst.map((i) => ({
      up: i.up,
      tok: i.tok,
      lost: i.lost,
      cells: i.cells.map((c) => c && { doc: c.doc, fresh: c.fresh, actor: c.actor, shard: c.shard, pending: [...c.pending] }),
      runs: [...i.runs],
      launches: i.launches.map((l) => [...l]),
      shards: [...i.shards],
    })),
    procs: s.procs.map((p) => [...p]),
    budget: { crashes: s.budget.crashes, failures: [...s.budget.failures], corruptions: [...s.budget.corruptions], schemaChanges: [...s.budget.schemaChanges] },
  };
}


/**
 * Drops what cannot matter any more, so equal futures share one state. An instance that no longer
 * holds the lease never commits again (tokens only grow): every write it tries is fenced, and the
 * fencing stops its runs and processes. What it can still do before that is run its turns and
 * launch the tasks it believes queued (a side effect before the fenced commit), so that is kept
 * and its copies of the documents are not. (Not under skipFencing, where a non-holder writes.)
 */
export function normalize(model: Model, s: ModelState): ModelState {
  if (model.faults.skipFencing) return s;
  s.inst.forEach((inst, i) => {
    if (!inst.up || inst.lost || (s.lease.h === i && s.lease.tok === inst.tok)) return;
    inst.launches = inst.launches.map((slots, a) =>
      slots.map((pending, slot) => {
        const cell = inst.cells[a];
        if (!pending) return false;
        if (!cell) return true;
        const task = cell.doc.t[slot];
        return !!task && task.e === 'started' && task.m >= 0 && model.machines.task.path(task.m) === 'queued';
      }),
    );
    inst.cells = inst.cells.map(() => null);
    inst.shards = [];
  });
  return s;
}

/**
 * Fields that no later step reads are reset before a document is committed: `pendFrom` is read
 * only by a recovery (is it the isolation of a failed termination?), and the memory version
 * inside a recovery point only by the recoverFromSnapshot fault.
 */
export function normalizeDoc(model: Model, d: Doc): void {
  if (d.pendFrom !== null && !(d.pendFrom === 'terminating' && phaseOf(model, d) === 'recovering')) d.pendFrom = null;
  if (d.snap && !model.faults.recoverFromSnapshot && d.snap.m !== 0) d.snap = { ...d.snap, m: 0 };
}

const docCodes = new WeakMap<Doc, string>();

function encodeDoc(d: Doc): string {
  let code = docCodes.get(d);
  if (code === undefined) docCodes.set(d, (code = docCode(d)));
  return code;
}

function docCode(d: Doc): string {
  const snap = d.snap ? `${d.snap.m}${d.snap.intact ? 'i' : 'c'}${d.snap.schemaOk ? 's' : 'o'}` : '-';
  return `${d.a}.${d.c}.${d.t.map((t) => `${t.m}${t.e[0]}`).join('.')}.${d.q}.${d.m}.${snap}.${d.basis[0]}${d.basis[1]}.${d.trg ? 1 : 0}${d.refused ? 1 : 0}.${d.pendFrom ?? ''}`;
}

/** Instance orders: as they are, and mirrored (R1 and R2 are interchangeable). */
const ORDERS = [
  [0, 1],
  [1, 0],
] as const;

/** The part of a state every agent sees: the lease, each instance's life, the crash budget. */
export function encodeShared(s: ModelState, order: readonly number[] = ORDERS[0]): string {
  const insts = order.map((k) => {
    const i = s.inst[k] as Instance;
    return !i.up ? 'down' : i.lost ? 'lost' : `${i.tok}`;
  });
  const holder = s.lease.h < 0 ? -1 : order.indexOf(s.lease.h);
  return `${holder}.${s.lease.tok}.${s.lease.live ? 1 : 0} ${insts.join(' ')} ${s.budget.crashes}`;
}

/**
 * One agent's part: its stored document and log digest, each instance's copy of it (a fresh copy
 * is the store's, so only a stale one is written out), its runs, launches, processes, budgets.
 */
export function encodeLocal(s: ModelState, a: number, order: readonly number[] = ORDERS[0]): string {
  const e = s.store[a];
  const parts = [e ? `${encodeDoc(e.doc)}/${e.chainEnd}/${e.gap ? 1 : 0}` : '-'];
  for (const k of order) {
    const i = s.inst[k] as Instance;
    if (!i.up || i.lost) {
      parts.push('.');
      continue;
    }
    const c = i.cells[a];
    const cell = c ? `${c.fresh ? 'f' : encodeDoc(c.doc)}${c.actor ? 'A' : ''}${c.pending.join('+')}` : '-';
    parts.push(`${cell}|${i.runs[a] ? 1 : 0}|${(i.launches[a] ?? []).map((x) => (x ? 1 : 0)).join('')}`);
  }
  parts.push((s.procs[a] ?? []).map((owner) => (owner < 0 ? -1 : order.indexOf(owner))).join(','), `${s.budget.failures[a]}${s.budget.corruptions[a]}${s.budget.schemaChanges[a]}`);
  return parts.join(' ');
}

/** Canonical encoding of the whole state (agents' shard placement included). */
export function encode(s: ModelState): string {
  return [encodeShared(s), ...s.store.map((_, a) => encodeLocal(s, a)), ...s.inst.map((i) => i.shards.join(','))].join(' # ');
}

/**
 * The projections the exploration deduplicates by: the shared part with one agent's part, each
 * in the smaller of its two instance orders (the system is symmetric in R1 and R2). Agents share
 * nothing else (one shard holds both, and its membership is each agent's own `actor`), and what
 * one agent's steps do to the shared part (a fenced commit makes an instance fenced) a renewal
 * does as well; so every reachable (shared, agent) pair of the product is reached by expanding
 * only states that bring a new pair. `test/verify/model-check.test.ts` checks that premise on
 * every step it explores.
 */
export function projections(s: ModelState): string[] {
  return s.store.map((_, a) => {
    const [first, second] = ORDERS.map((order) => `${a} ${encodeShared(s, order)} ${encodeLocal(s, a, order)}`) as [string, string];
    return first < second ? first : second;
  });
}

/** cyrb53: a 53-bit hash of the encoding, so the visited set holds numbers, not strings. */
export function hash53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export function phaseOf(model: Model, doc: Doc): string {
  return agentPhase(model.machines, doc.a).phase;
}

export function statusOf(model: Model, doc: Doc): string {
  return agentPhase(model.machines, doc.a).status;
}

export function liveTask(model: Model, task: TaskRec): boolean {
  return task.m >= 0 && !model.machines.task.done(task.m);
}

export function runIdOf(model: Model, doc: Doc): string | null {
  return (model.machines.agent.snapshot(doc.a).context as { runId: string | null }).runId;
}

/** The scheduler facts the runtime would project from the document (`factsOf`). */
export function factsOf(model: Model, doc: Doc): SchedulerFacts {
  const { status } = agentPhase(model.machines, doc.a);
  return {
    ...emptyFacts(status),
    current_run_id: runIdOf(model, doc),
    queue: { queued: doc.q, interrupted: 0 },
    tasks: doc.t.flatMap((task, i) => (liveTask(model, task) ? [{ id: `task-${i + 1}`, status: model.machines.task.path(task.m) as 'queued', work_item_id: null }] : [])),
  };
}

/** `needsRecovery` (src/runtime/roster.ts) over the abstract document. */
export function needsRecovery(model: Model, doc: Doc): boolean {
  if (doc.t.some((t) => t.e === 'started' || liveTask(model, t))) return true;
  const phase = phaseOf(model, doc);
  if (runIdOf(model, doc) || ['initializing', 'waking', 'recovering', 'terminating', 'evolving'].includes(phase)) return true;
  if (phase === 'terminated' || statusOf(model, doc) === 'stopped') return false;
  if (phase !== 'sleeping') return true;
  return !doc.refused && doc.q > 0;
}
