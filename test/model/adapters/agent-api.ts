import { DomainError, type AgentEvent, type AgentSummary, type ErrorCode, type EventsPage, type TransitionTarget } from '../../../src/domain/index.js';
import type { Runtime } from '../../../src/runtime/runtime.js';

/** The agent operations the model paths use, over the runtime port or over HTTP. */
export interface AgentApi {
  readonly via: 'runtime' | 'http';
  createAgent(agentId: string, idempotencyKey: string): Promise<void>;
  transition(agentId: string, to: TransitionTarget, reason: string): Promise<void>;
  control(agentId: string, action: 'start' | 'stop'): Promise<void>;
  terminate(agentId: string): Promise<void>;
  prompt(agentId: string, text: string): Promise<void>;
  abortRun(agentId: string): Promise<void>;
  execCommand(agentId: string, cmd: string, summary: string): Promise<string>;
  summary(agentId: string): Promise<AgentSummary>;
  /**
   * The agent's `transition_committed` events after `afterSeq`: each carries the actor's state
   * value before and after one change, as committed. (The TransitionRecords themselves are not
   * used: an explicit transition's record has its `to_state` rewritten to where the effects ended.)
   */
  stateChanges(agentId: string, afterSeq: number): Promise<RecordedChange[]>;
}

export interface RecordedChange {
  from: string;
  to: string;
  event_seq: number;
}

function changesOf(events: AgentEvent[]): RecordedChange[] {
  return events
    .filter((e) => e.type === 'transition_committed')
    .map((e) => ({ from: String(e.payload['from_state']), to: String(e.payload['to_state']), event_seq: e.event_seq }));
}

async function allChanges(page: (after: number) => Promise<EventsPage>, afterSeq: number): Promise<RecordedChange[]> {
  const out: RecordedChange[] = [];
  let after = afterSeq;
  for (;;) {
    const { events, has_newer } = await page(after);
    out.push(...changesOf(events));
    const last = events.at(-1);
    if (!has_newer || !last) return out;
    after = last.event_seq;
  }
}

let transitionIds = 0;

function nextTransitionId(): string {
  transitionIds += 1;
  return `model-tr-${transitionIds}`;
}

/** Straight through the `RuntimeApi` port; `runtime()` is read per call because paths may restart it. */
export function runtimeApi(runtime: () => Runtime): AgentApi {
  return {
    via: 'runtime',
    async createAgent(agentId, idempotencyKey) {
      await runtime().createAgent({ agent_id: agentId, config: { turn_runner: 'scripted', model: 'scripted' } }, { idempotency_key: idempotencyKey });
    },
    async transition(agentId, to, reason) {
      const { state_version } = await runtime().getSummary(agentId);
      await runtime().transition(agentId, { transition_id: nextTransitionId(), to, reason, expected_version: state_version });
    },
    async control(agentId, action) {
      await runtime().control(agentId, { action });
    },
    async terminate(agentId) {
      await runtime().terminate(agentId);
    },
    async prompt(agentId, text) {
      await runtime().prompt(agentId, { text });
    },
    async abortRun(agentId) {
      await runtime().abortRun(agentId, {});
    },
    async execCommand(agentId, cmd, summary) {
      return (await runtime().execCommand(agentId, { cmd, summary, accepts_input: false })).id;
    },
    summary: (agentId) => runtime().getSummary(agentId),
    stateChanges: (agentId, afterSeq) => allChanges((after) => runtime().eventsPage(agentId, { after_seq: after, limit: 512, order: 'asc' }), afterSeq),
  };
}

interface Envelope {
  ok?: boolean;
  error?: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

/** Over HTTP on a real socket (`buildApp({ runtime, auth: {} })` listening on a port). */
export function httpApi(base: string): AgentApi {
  const call = async <T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await response.json()) as T & Envelope;
    if (!response.ok) {
      const error = json.error;
      throw new DomainError(error?.code ?? 'internal_error', error?.message ?? `HTTP ${response.status}`, error?.details);
    }
    return json;
  };
  return {
    via: 'http',
    async createAgent(agentId, idempotencyKey) {
      await call('POST', '/api/control/agents', { agent_id: agentId, config: { turn_runner: 'scripted', model: 'scripted' } }, { 'idempotency-key': idempotencyKey });
    },
    async transition(agentId, to, reason) {
      const { state_version } = await call<AgentSummary>('GET', `/api/agents/${agentId}/status`);
      await call('POST', `/api/control/agents/${agentId}/transitions`, { transition_id: nextTransitionId(), to, reason, expected_version: state_version });
    },
    async control(agentId, action) {
      await call('POST', `/api/control/agents/${agentId}/control`, { action });
    },
    async terminate(agentId) {
      await call('DELETE', `/api/control/agents/${agentId}`);
    },
    async prompt(agentId, text) {
      await call('POST', `/api/control/agents/${agentId}/prompt`, { text });
    },
    async abortRun(agentId) {
      await call('POST', `/api/control/agents/${agentId}/current-run/abort`, {});
    },
    async execCommand(agentId, cmd, summary) {
      return (await call<{ task_id: string }>('POST', `/api/control/agents/${agentId}/tasks`, { cmd, summary })).task_id;
    },
    summary: (agentId) => call<AgentSummary>('GET', `/api/agents/${agentId}/status`),
    stateChanges: (agentId, afterSeq) => allChanges((after) => call<EventsPage>('GET', `/api/agents/${agentId}/events?after_seq=${after}&limit=512&order=asc`), afterSeq),
  };
}
