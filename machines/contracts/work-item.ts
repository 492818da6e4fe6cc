import type {
  SchedulerFacts,
  WaitConditionKind,
  WorkItemScheduling,
  WorkItemSchedulingState,
  WorkReactivationMode,
  WorkSignal,
} from '../../src/domain/index.js';
import { activeWaitsOf } from './waits.js';
import type { WaitFact } from './waits.js';

export type WorkItemFact = SchedulerFacts['work_items'][number];

/** The scheduling states that name what an item waits for. */
export type WaitingSchedulingState = Extract<WorkItemSchedulingState, `waiting_${string}`>;

/** A work item together with its derived scheduling state. */
export interface ProjectedWorkItem {
  item: WorkItemFact;
  scheduling: WorkItemScheduling;
}

/** Holon-reference §4.2 row 4: when one item holds waits of several kinds, the earliest kind here decides. */
const WAIT_KIND_PRECEDENCE: readonly WaitConditionKind[] = ['task', 'operator', 'timer', 'external', 'system'];

const WAITING_STATE_OF: Readonly<Record<WaitConditionKind, WaitingSchedulingState>> = {
  task: 'waiting_task',
  operator: 'waiting_operator',
  timer: 'waiting_timer',
  external: 'waiting_external',
  system: 'waiting_system',
};

const WAITING_STATES: readonly WorkItemSchedulingState[] = Object.values(WAITING_STATE_OF);

export function isWaitingState(state: WorkItemSchedulingState): state is WaitingSchedulingState {
  return WAITING_STATES.includes(state);
}

function dominantWaitKind(waits: readonly WaitFact[]): WaitConditionKind | undefined {
  return WAIT_KIND_PRECEDENCE.find((kind) => waits.some((wait) => wait.kind === kind));
}

/**
 * Holon-reference §4.2, first match wins. Rows 2 (completing) and 3 (yielded) are not modelled: our
 * WorkItemState has no `completing` and the facts carry no continuation frames.
 */
export function deriveWorkItemScheduling(item: WorkItemFact, facts: SchedulerFacts): WorkItemScheduling {
  const is_current = item.state === 'open' && facts.current_work_item_id === item.id;
  const verdict = (scheduling_state: WorkItemSchedulingState, reason_code: string): WorkItemScheduling => ({
    scheduling_state,
    reason_code,
    is_current,
  });
  if (item.state === 'completed') return verdict('completed', 'completed');
  const kind = dominantWaitKind(activeWaitsOf(item.id, facts));
  if (kind !== undefined) return verdict(WAITING_STATE_OF[kind], `active_${kind}_wait`);
  if (item.blocked_by !== null) return verdict('blocked', 'manual_blocker');
  if (item.plan_status === 'needs_input') return verdict('waiting_operator', 'plan_needs_input');
  // Draft items are runnable too: planning is work the agent can do.
  return verdict('runnable', 'runnable');
}

// Stored timestamps are UTC ISO-8601 strings, so lexical order is chronological order.
function compareText(left: string, right: string): number {
  return left === right ? 0 : left < right ? -1 : 1;
}

/** Read-model order for waiting/blocked candidates (§4.2 ranks 3–7): newest update first, ties by id. */
function byRecency(left: ProjectedWorkItem, right: ProjectedWorkItem): number {
  return compareText(right.item.updated_at, left.item.updated_at) || compareText(left.item.id, right.item.id);
}

/** Queued runnable items are served FIFO (§4.2 rank 2): oldest first, ties by id. */
function byCreation(left: WorkItemFact, right: WorkItemFact): number {
  return compareText(left.created_at, right.created_at) || compareText(left.id, right.id);
}

/** Every work item with its scheduling state, in read-model order. */
export function projectWorkItems(facts: SchedulerFacts): ProjectedWorkItem[] {
  return facts.work_items
    .map((item) => ({ item, scheduling: deriveWorkItemScheduling(item, facts) }))
    .sort(byRecency);
}

export interface WaitingWorkItem {
  item: WorkItemFact;
  state: WaitingSchedulingState;
  is_current: boolean;
}

/**
 * The scheduler's "waiting work item" (§4.2 last paragraph): an item in a waiting_* state that is current or
 * owns unresolved waits. The current item is preferred because it is what the last turn was working on.
 */
export function waitingWorkItem(facts: SchedulerFacts): WaitingWorkItem | null {
  const candidates: WaitingWorkItem[] = [];
  for (const { item, scheduling } of projectWorkItems(facts)) {
    const state = scheduling.scheduling_state;
    if (isWaitingState(state) && (scheduling.is_current || activeWaitsOf(item.id, facts).length > 0)) {
      candidates.push({ item, state, is_current: scheduling.is_current });
    }
  }
  return candidates.find((candidate) => candidate.is_current) ?? candidates[0] ?? null;
}

function signalFor(item: WorkItemFact, reactivation_mode: WorkReactivationMode): WorkSignal {
  return { work_item_id: item.id, state: item.state, reactivation_mode };
}

/**
 * The work reactivation signal: the current runnable item, else the oldest queued runnable one.
 * Completed items are never runnable, so they never signal. The canonical execution gate of §4.2 (execution
 * record revision) is the runtime's concern: the facts only list items it considers live.
 */
export function workSignal(facts: SchedulerFacts): WorkSignal | null {
  const runnable = facts.work_items.filter(
    (item) => deriveWorkItemScheduling(item, facts).scheduling_state === 'runnable',
  );
  const current = runnable.find((item) => item.id === facts.current_work_item_id);
  if (current !== undefined) return signalFor(current, 'continue_active');
  const [queued] = runnable.sort(byCreation);
  return queued === undefined ? null : signalFor(queued, 'activate_queued');
}
