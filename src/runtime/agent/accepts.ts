import { createActor, transition, type AnyMachineSnapshot } from 'xstate';
import { z } from 'zod';
import type { AgentEvent as MachineEvent } from '../../../machines/index.js';
import {
  AbortRunRequest,
  ControlRequest,
  CreateAgentRequest,
  DomainError,
  TransitionRequest,
  TransitionTarget,
  type AcceptedControl,
  type StateAccepts,
  type ControlRoute,
  type ErrorCode,
} from '../../domain/index.js';
import type { AgentDoc } from './agent-doc.js';
import type { AgentCell, AgentLogic } from './agent-cell.js';
import { statePath } from './tx.js';
import { factsOf } from './facts.js';

/**
 * What an agent accepts now: the public machine events (the ones an HTTP request sends) that its
 * current state takes, by `snapshot.can` with the payload the runtime would send (scheduler facts
 * from the document, so guards like canSleep decide), each with the requests that send it. A
 * control request the state refuses carries the same list in its 409's `details.allowed`.
 */

type Target = TransitionRequest['to'];

/** The machine event `POST .../transitions {to}` sends the agent in its current state. */
export function transitionEvent(to: Target, reason: string, doc: AgentDoc): MachineEvent {
  switch (to) {
    case 'sleeping':
      return { type: 'IDLE', facts: factsOf(doc) };
    case 'waking':
    case 'active':
      return doc.state.status === 'stopped' ? { type: 'START' } : { type: 'WAKE', reason };
    case 'evolving':
      return { type: 'EVOLVE', reason };
    case 'recovering':
      return { type: 'RECOVER', reason };
    case 'terminating':
    case 'terminated':
      return { type: 'TERMINATE', reason };
  }
}

const schemas = new Map<z.ZodType, unknown>();

function jsonSchema(schema: z.ZodType): unknown {
  let json = schemas.get(schema);
  if (json === undefined) schemas.set(schema, (json = z.toJSONSchema(schema, { io: 'input' })));
  return json;
}

function request(method: ControlRoute['method'], path: string, body: unknown, schema: z.ZodType | null, headers?: Record<string, string>): ControlRoute {
  return { method, path, ...(headers ? { headers } : {}), body, schema: schema ? jsonSchema(schema) : null };
}

/** Every public event, with the requests that send it from this document. */
function publicEvents(agentId: string, doc: AgentDoc): Array<{ event: MachineEvent; requests: ControlRoute[] }> {
  const id = encodeURIComponent(agentId);
  const control = `/api/control/agents/${id}`;
  const byType = new Map<string, { event: MachineEvent; requests: ControlRoute[] }>();
  const add = (event: MachineEvent, req: ControlRoute) => {
    const entry = byType.get(event.type) ?? { event, requests: [] };
    entry.requests.push(req);
    byType.set(event.type, entry);
  };
  // A retried create with the same Idempotency-Key initializes an agent left in Created.
  add({ type: 'INITIALIZE' }, request('POST', '/api/control/agents', { agent_id: agentId }, CreateAgentRequest, { 'Idempotency-Key': '<the key the first create used>' }));
  add({ type: 'START' }, request('POST', `${control}/control`, { action: 'start' }, ControlRequest));
  add({ type: 'STOP', reason: 'operator stop' }, request('POST', `${control}/control`, { action: 'stop' }, ControlRequest));
  add({ type: 'TERMINATE', reason: 'operator delete' }, request('DELETE', control, null, null));
  add({ type: 'TURN.ABORT' }, request('POST', `${control}/current-run/abort`, doc.state.current_run_id ? { run_id: doc.state.current_run_id } : {}, AbortRunRequest));
  for (const to of TransitionTarget.options) {
    const body = { transition_id: '<a new unique id>', to, reason: '<why>', expected_version: doc.state.state_version };
    add(transitionEvent(to, 'requested transition', doc), request('POST', `${control}/transitions`, body, TransitionRequest));
  }
  return [...byType.values()];
}

/** The agent's committed machine snapshot, restored without starting an actor (a read holds no compute). */
export function committedSnapshot(logic: AgentLogic, cell: AgentCell): AnyMachineSnapshot {
  const machine = cell.doc.machine;
  const actor = createActor(logic, { input: { agentId: cell.id }, ...(machine ? { snapshot: machine as never } : {}) });
  return actor.getSnapshot();
}

export function acceptedEvents(snapshot: AnyMachineSnapshot, agentId: string, doc: AgentDoc, options: { schemas: boolean } = { schemas: true }): AcceptedControl[] {
  if (snapshot.status !== 'active') return [];
  return publicEvents(agentId, doc)
    .filter(({ event }) => snapshot.can(event))
    .map(({ event, requests }) => {
      const [next] = transition(snapshot.machine, snapshot, event) as [AnyMachineSnapshot, unknown];
      return {
        event: event.type,
        leads_to: statePath(next.value),
        requests: options.schemas ? requests : requests.map(({ schema: _schema, ...rest }) => rest),
      };
    });
}

/** `GET /api/agents/:id/accepts`. */
export function acceptsOf(logic: AgentLogic, cell: AgentCell): StateAccepts {
  const snapshot = committedSnapshot(logic, cell);
  const { state } = cell.doc;
  return {
    agent_id: cell.id,
    state: statePath(snapshot.value),
    phase: state.phase,
    status: state.status,
    state_version: state.state_version,
    accepts: acceptedEvents(snapshot, cell.id, cell.doc),
  };
}

/** A control request the state refuses: the error carries what it accepts instead (`details.allowed`). */
export function refusedByState(snapshot: AnyMachineSnapshot, agentId: string, doc: AgentDoc, code: ErrorCode, message: string, details: Record<string, unknown> = {}): DomainError {
  return new DomainError(code, message, { ...details, state: statePath(snapshot.value), allowed: acceptedEvents(snapshot, agentId, doc, { schemas: false }) });
}
