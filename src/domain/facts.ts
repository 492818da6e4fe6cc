import { z } from 'zod';
import { AgentStatus } from './agent.js';
import { ClosureDecision } from './scheduling.js';
import { WorkItemPlanStatus, WorkItemState } from './work-item.js';
import { WaitConditionKind, WaitConditionStatus } from './wait.js';
import { TaskStatus } from './task.js';

/**
 * The scheduler's view of one agent: every fact the contracts in `machines/contracts/` read.
 * Built by the runtime from stored records; the machines receive it in events, so guards stay pure.
 */
export const SchedulerFacts = z.object({
  status: AgentStatus,
  current_run_id: z.string().nullable(),
  /** Turns started so far; 0 means no turn has started. */
  turn_index: z.number().int().nonnegative(),
  /** How the latest turn ended, or null while it runs / before the first one. */
  last_turn_terminal: z.enum(['completed', 'failed', 'aborted']).nullable(),
  runtime_error: z.boolean(),
  current_work_item_id: z.string().nullable(),
  queue: z.object({
    /** Entries with status `queued`. */
    queued: z.number().int().nonnegative(),
    /** Entries interrupted by a shutdown that will replay. */
    interrupted: z.number().int().nonnegative(),
  }),
  work_items: z.array(
    z.object({
      id: z.string(),
      state: WorkItemState,
      plan_status: WorkItemPlanStatus,
      blocked_by: z.string().nullable(),
      revision: z.number().int().positive(),
      created_at: z.string(),
      updated_at: z.string(),
    }),
  ),
  waits: z.array(
    z.object({
      id: z.string(),
      kind: WaitConditionKind,
      status: WaitConditionStatus,
      work_item_id: z.string().nullable(),
      subject_ref: z.string().nullable(),
    }),
  ),
  /** Tasks the rules may read; the runtime passes the live (non-terminal) ones, the only ones any rule reads. */
  tasks: z.array(z.object({ id: z.string(), status: TaskStatus, work_item_id: z.string().nullable() })),
  active_timers: z.number().int().nonnegative(),
  pending_wake_hint: z.boolean(),
  /** The closure of the previous turn (the continuation contract reads it as "prior"). */
  prior_closure: ClosureDecision.nullable(),
});
export type SchedulerFacts = z.infer<typeof SchedulerFacts>;

/** Facts of an agent with nothing at all: the starting point of tests and new agents. */
export function emptyFacts(status: AgentStatus = 'awake_idle'): SchedulerFacts {
  return {
    status,
    current_run_id: null,
    turn_index: 0,
    last_turn_terminal: null,
    runtime_error: false,
    current_work_item_id: null,
    queue: { queued: 0, interrupted: 0 },
    work_items: [],
    waits: [],
    tasks: [],
    active_timers: 0,
    pending_wake_hint: false,
    prior_closure: null,
  };
}
