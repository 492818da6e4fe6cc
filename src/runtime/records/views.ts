import {
  derivePosture,
  deriveClosure,
  deriveWorkItemScheduling,
  isActiveWait,
  isTerminalTask,
} from '../../../machines/contracts/index.js';
import type {
  ActorNodeShape,
  AgentStateView,
  EventsPage,
  EventsQuery,
  AgentSummary,
  ExternalTriggerSummary,
  ExternalTriggerRecord,
  WorkItemRecord,
  WorkItemView,
} from '../../domain/index.js';
import type { AgentDoc } from '../agent/agent-doc.js';
import type { AgentCell } from '../agent/agent-cell.js';
import type { Tx } from '../agent/tx.js';
import { factsOf } from '../agent/facts.js';

export function triggerSummary(trigger: ExternalTriggerRecord): ExternalTriggerSummary {
  return { id: trigger.id, delivery_mode: trigger.delivery_mode, status: trigger.status };
}

export function workItemView(doc: AgentDoc, item: WorkItemRecord): WorkItemView {
  const facts = factsOf(doc);
  const fact = facts.work_items.find((w) => w.id === item.id);
  return { ...item, scheduling: fact ? deriveWorkItemScheduling(fact, facts) : { scheduling_state: 'completed', reason_code: 'completed', is_current: false } };
}

/** What a summary is read from: the agent's records and its live actor, if any (an `AgentCell`, or an operation's draft). */
export type SummarySource = Pick<AgentCell, 'doc' | 'actor'>;

/** The state value of each live actor of the agent, keyed by actor id. */
export function statechartOf(cell: SummarySource): Record<string, unknown> {
  const snapshot = cell.actor?.getSnapshot();
  if (!snapshot) {
    const persisted = cell.doc.machine as { value?: unknown; children?: Record<string, { snapshot?: { value?: unknown } }> } | null;
    const out: Record<string, unknown> = { agent: persisted?.value ?? null };
    for (const [id, child] of Object.entries(persisted?.children ?? {})) out[id] = child.snapshot?.value ?? null;
    return out;
  }
  const out: Record<string, unknown> = { agent: snapshot.value };
  for (const [id, child] of Object.entries(snapshot.children)) {
    const value = (child?.getSnapshot() as { value?: unknown } | undefined)?.value;
    out[id] = value ?? null;
  }
  return out;
}

/** Why a stopped agent is stopped while its seed-002 phase still reads `active`, and how to resume it. */
const STOPPED_HINT =
  'stopped (by Stop or an aborted run): the lifecycle phase stays active, since Stop is a control and not a seed-002 phase; ' +
  'no turn starts and wakes are ignored until Start (POST /api/control/agents/{id}/control {"action":"start"}); queued messages are kept';

/** When a sleeping agent's earliest active timer is due: it wakes then, unless something else wakes it first. */
function sleepingUntil(doc: AgentDoc): string | null {
  if (doc.state.status !== 'asleep') return null;
  const due = doc.timers.filter((t) => t.status === 'active' && t.next_fire_at !== null).map((t) => t.next_fire_at as string);
  return due.length === 0 ? null : due.reduce((a, b) => (Date.parse(a) <= Date.parse(b) ? a : b));
}

/** Seed 000 AgentSummary, assembled on read from the authoritative records: every field says what is so now. */
export function assembleSummary(cell: SummarySource): AgentSummary {
  const doc = cell.doc;
  const facts = factsOf(doc);
  const { current_work_item_id: _focus, phase: _phase, state_version: _version, ...agent } = doc.state;
  const stopped = doc.state.status === 'stopped';
  const terminated = doc.state.phase === 'terminated';
  // The last turn's closure decision (or, before any turn, the one the facts give now), with the
  // runtime posture of now: the agent may have gone to sleep (or woken) since that turn ended.
  const closure = doc.last_closure ?? deriveClosure(facts);
  return {
    identity: {
      agent_id: doc.identity.agent_id,
      kind: doc.identity.kind,
      profile_preset: doc.identity.profile_preset,
      owner: doc.identity.owner,
      mission: doc.identity.mission,
      registry_status: doc.identity.registry_status,
    },
    agent: { ...agent, sleeping_until: sleepingUntil(doc) },
    scheduling_posture: derivePosture(facts),
    lifecycle: {
      accepts_external_messages: !stopped && !terminated,
      ...(stopped && !terminated ? { operator_hint: STOPPED_HINT } : {}),
      ...(doc.refusal ? { operator_hint: `${doc.refusal.reason}; ${doc.refusal.hint}` } : {}),
    },
    model: { name: doc.config.model, runner: doc.config.turn_runner },
    token_usage: { input_tokens: 0, output_tokens: 0 },
    closure: { ...closure, runtime_posture: doc.state.status === 'asleep' ? 'sleeping' : 'awake' },
    execution: { run_id: doc.state.current_run_id, turn_index: doc.state.turn_index },
    active_children: doc.tasks
      .filter((t) => t.child_agent_id && !isTerminalTask(t.status))
      .map((t) => ({ agent_id: t.child_agent_id ?? '', task_id: t.id, status: t.status })),
    active_wait_conditions: doc.waits.filter(isActiveWait),
    active_external_triggers: doc.triggers.filter((t) => t.status === 'active').map(triggerSummary),
    phase: doc.state.phase,
    state_version: doc.state.state_version,
    statechart: statechartOf(cell),
  };
}

/** The AgentSummary of the agent as the operation leaves it (its draft and live actor). */
export function draftSummary(tx: Tx): AgentSummary {
  tx.syncMachine();
  return assembleSummary({ doc: tx.doc, actor: tx.cell.actor });
}

/** GetState: the summary and every unfinished record. */
export function stateView(cell: SummarySource): AgentStateView {
  const doc = cell.doc;
  return {
    summary: assembleSummary(cell),
    queue: doc.queue.filter((m) => m.status === 'queued' || m.status === 'interrupted' || m.status === 'dequeued'),
    tasks: doc.tasks.filter((t) => !isTerminalTask(t.status)),
    timers: doc.timers,
    work_items: doc.work_items.map((w) => workItemView(doc, w)),
    waits: doc.waits.filter(isActiveWait),
    triggers: doc.triggers.map(triggerSummary),
    last_decision: doc.last_decision,
  };
}

/** The agent actor and its children, with the state each is in. */
export function actorTree(agentId: string, cell: SummarySource): ActorNodeShape {
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

/** A page of the event log with the cursors a client pages on. */
export function eventsPageOf(page: Pick<EventsPage, 'events' | 'oldest_seq' | 'newest_seq'>, q: EventsQuery): EventsPage {
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
