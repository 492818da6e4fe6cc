import {
  derivePosture,
  deriveClosure,
  deriveWorkItemScheduling,
  isTerminalTask,
} from '../../machines/contracts/index.js';
import type {
  AgentSummary,
  ExternalTriggerSummary,
  ExternalTriggerRecord,
  WorkItemRecord,
  WorkItemView,
} from '../domain/index.js';
import type { AgentDoc } from './agent-doc.js';
import type { AgentCell } from './agent-cell.js';
import { factsOf } from './facts.js';

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

/** Seed 000 AgentSummary, assembled on read from the authoritative records. */
export function assembleSummary(cell: SummarySource): AgentSummary {
  const doc = cell.doc;
  const facts = factsOf(doc);
  const { current_work_item_id: _focus, ...agent } = doc.state;
  const stopped = doc.state.status === 'stopped';
  const terminated = doc.state.phase === 'terminated';
  return {
    identity: {
      agent_id: doc.identity.agent_id,
      kind: doc.identity.kind,
      profile_preset: doc.identity.profile_preset,
      owner: doc.identity.owner,
      mission: doc.identity.mission,
      registry_status: doc.identity.registry_status,
    },
    agent,
    scheduling_posture: derivePosture(facts),
    lifecycle: {
      phase: doc.state.phase,
      accepts_external_messages: !stopped && !terminated,
      ...(stopped && !terminated ? { operator_hint: 'administratively stopped; start before new prompts or wakes' } : {}),
      ...(doc.refusal ? { operator_hint: `${doc.refusal.reason}; ${doc.refusal.hint}` } : {}),
    },
    model: { name: doc.config.model, runner: doc.config.turn_runner },
    token_usage: { input_tokens: 0, output_tokens: 0 },
    closure: doc.last_closure ?? deriveClosure(facts),
    execution: { run_id: doc.state.current_run_id, turn_index: doc.state.turn_index },
    active_children: doc.tasks
      .filter((t) => t.child_agent_id && !isTerminalTask(t.status))
      .map((t) => ({ agent_id: t.child_agent_id ?? '', task_id: t.id, status: t.status })),
    active_wait_conditions: doc.waits.filter((w) => w.status === 'active' || w.status === 'triggered'),
    active_external_triggers: doc.triggers.filter((t) => t.status === 'active').map(triggerSummary),
    phase: doc.state.phase,
    state_version: doc.state.state_version,
    statechart: statechartOf(cell),
  };
}
