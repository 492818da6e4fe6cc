import type { Readable } from 'node:stream';
import type {
  AbortRunRequest,
  ActorNodeShape,
  AgentAccepts,
  AgentListQuery,
  AgentEvent,
  AgentListEntry,
  AgentStateView,
  AgentSummary,
  CallbackResult,
  ClaimTurnRequest,
  CompleteTurnRequest,
  ControlRequest,
  CreateAgentRequest,
  CreateTimerRequest,
  CreateTriggerRequest,
  CreateWaitRequest,
  CreateWorkItemRequest,
  CompleteWorkItemRequest,
  EnqueueRequest,
  EventsPage,
  EventsQuery,
  ExecCommandRequest,
  ExternalTriggerSummary,
  IdempotencyClaim,
  HeartbeatTurnRequest,
  MessageEnvelope,
  InspectionMessage,
  InvokeAgentRequest,
  MessageAccepted,
  PageQuery,
  PickWorkItemRequest,
  PromptRequest,
  Readiness,
  Snapshot,
  StateAccepts,
  TaskInputRequest,
  TaskInputResult,
  TaskOutputQuery,
  TaskOutputResult,
  TaskRecord,
  TaskStopResult,
  TimerRecord,
  TransitionRecord,
  TransitionRequest,
  TriggerCapability,
  TurnClaim,
  UpdateWorkItemRequest,
  WaitConditionRecord,
  WakeRequest,
  WakeResult,
  WorkItemView,
} from '../domain/index.js';

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/**
 * A request's Idempotency-Key as an operation takes it: the runtime records it with the effect and,
 * when the key is already recorded for the same request, answers with the recorded result instead
 * of acting again and sets `replayed` on this object (the caller's `Idempotent-Replay`).
 */
export interface IdempotencyReceipt extends IdempotencyClaim {
  replayed?: boolean;
}

/** Options shared by mutating agent operations. */
export interface MutationOptions {
  /** Refuse with `version_conflict` unless the agent's `state_version` equals this (checked in the agent's lane). */
  expected_version?: number;
  /**
   * The request's Idempotency-Key, recorded in the commit that makes the operation's effect
   * durable: a retry with the same key and request — concurrent, or after a crash — gets the
   * recorded answer and changes nothing; the same key with another request fails with
   * `idempotency_conflict`. Keys are remembered per agent (its newest 256 keyed requests).
   */
  idempotency?: IdempotencyReceipt;
}

/** A raw body received on a capability URL. */
export interface CallbackBody {
  content_type: string | null;
  body: Buffer;
}

/**
 * One method per operation of the HTTP contract (`shared/spec/http-api.md`); the HTTP layer maps
 * routes onto these one-to-one. Inputs are the zod request types of `src/domain/requests.ts`
 * (already parsed: methods re-validate, so direct callers are safe too). Every failure is a
 * `DomainError` and changes nothing.
 */
export interface RuntimeApi {
  // agents
  createAgent(request: CreateAgentRequest, options?: { idempotency_key?: string }): Promise<{ agent: AgentSummary; external_trigger: TriggerCapability; replayed: boolean }>;
  listAgents(query: AgentListQuery): Promise<Page<AgentListEntry>>;
  getSummary(agent_id: string): Promise<AgentSummary>;
  getState(agent_id: string): Promise<AgentStateView>;
  /** The public events the agent's current state accepts (`snapshot.can`), each with the requests that send it. */
  accepts(agent_id: string): Promise<StateAccepts>;
  control(agent_id: string, request: ControlRequest, options?: MutationOptions): Promise<AgentSummary>;
  transition(agent_id: string, request: TransitionRequest, options?: MutationOptions): Promise<{ record: TransitionRecord; replayed: boolean }>;
  listTransitions(agent_id: string, query: { after_seq?: number; limit: number }): Promise<TransitionRecord[]>;
  takeSnapshot(agent_id: string, options?: MutationOptions): Promise<Snapshot>;
  listSnapshots(agent_id: string): Promise<Snapshot[]>;
  getSnapshot(agent_id: string, snapshot_id: string): Promise<Snapshot>;
  abortRun(agent_id: string, request: AbortRunRequest, options?: MutationOptions): Promise<{ agent_id: string; run_id: string; aborted: true }>;
  terminate(agent_id: string, options?: MutationOptions): Promise<AgentSummary>;

  // messages, wakes, work
  prompt(agent_id: string, request: PromptRequest, options?: MutationOptions): Promise<MessageAccepted>;
  enqueue(agent_id: string, request: EnqueueRequest, options?: MutationOptions): Promise<MessageAccepted>;
  wake(agent_id: string, request: WakeRequest, options?: MutationOptions): Promise<WakeResult>;
  createWorkItem(agent_id: string, request: CreateWorkItemRequest, options?: MutationOptions): Promise<WorkItemView>;
  updateWorkItem(agent_id: string, work_item_id: string, request: UpdateWorkItemRequest, options?: MutationOptions): Promise<WorkItemView>;
  pickWorkItem(agent_id: string, work_item_id: string, request: PickWorkItemRequest, options?: MutationOptions): Promise<WorkItemView>;
  completeWorkItem(agent_id: string, work_item_id: string, request: CompleteWorkItemRequest, options?: MutationOptions): Promise<WorkItemView>;
  listWorkItems(agent_id: string): Promise<WorkItemView[]>;
  getWorkItem(agent_id: string, work_item_id: string): Promise<WorkItemView>;
  createWait(agent_id: string, request: CreateWaitRequest, options?: MutationOptions): Promise<WaitConditionRecord>;
  cancelWait(agent_id: string, wait_id: string, options?: MutationOptions): Promise<WaitConditionRecord>;
  createTimer(agent_id: string, request: CreateTimerRequest, options?: MutationOptions): Promise<TimerRecord>;
  cancelTimer(agent_id: string, timer_id: string, options?: MutationOptions): Promise<TimerRecord>;
  listTimers(agent_id: string): Promise<TimerRecord[]>;
  getTimer(agent_id: string, timer_id: string): Promise<TimerRecord>;

  // tasks (seed 004)
  execCommand(agent_id: string, request: ExecCommandRequest, options?: MutationOptions): Promise<TaskRecord>;
  invokeAgent(agent_id: string, request: InvokeAgentRequest, options?: MutationOptions): Promise<TaskRecord>;
  listTasks(agent_id: string): Promise<TaskRecord[]>;
  getTask(agent_id: string, task_id: string): Promise<TaskRecord>;
  taskOutput(agent_id: string, task_id: string, query: TaskOutputQuery): Promise<TaskOutputResult>;
  taskArtifact(agent_id: string, task_id: string): Promise<Readable>;
  taskInput(agent_id: string, task_id: string, request: TaskInputRequest, options?: MutationOptions): Promise<TaskInputResult>;
  stopTask(agent_id: string, task_id: string, options?: MutationOptions): Promise<TaskStopResult>;

  // external triggers (seed 003)
  createTrigger(agent_id: string, request: CreateTriggerRequest, options?: MutationOptions): Promise<TriggerCapability>;
  revokeTrigger(agent_id: string, trigger_id: string, options?: MutationOptions): Promise<ExternalTriggerSummary>;
  resetCallback(agent_id: string, options?: MutationOptions): Promise<TriggerCapability>;
  /** Fails with `forbidden` for an unknown, revoked or wrong-mode token; never echoes the token. */
  deliverCallback(mode: 'wake_hint' | 'enqueue_message', token: string, body: CallbackBody): Promise<CallbackResult>;

  // events
  eventsPage(agent_id: string, query: EventsQuery): Promise<EventsPage>;
  /**
   * Live events of one agent (or all agents with `null`), delivered after they are durable. On a
   * store several nodes share, what the other nodes commit reaches a `null` subscription once
   * `allEventsReady` resolves.
   */
  subscribe(agent_id: string | null, listener: (event: AgentEvent) => void): () => void;
  /** Resolves once the `subscribe(null, …)` subscriptions made so far receive every node's commits (at once on a store one node owns). */
  allEventsReady(): Promise<void>;

  // turn workers
  /** A turn of an `http_worker` agent: its `run_id` is the agent's current run, its `claim_id` this offer of it. */
  claimTurn(request: ClaimTurnRequest, signal?: AbortSignal, options?: Pick<MutationOptions, 'idempotency'>): Promise<TurnClaim | null>;
  /**
   * Refused with `lease_lost` unless `claim_id` still holds the turn `run_id`. With `take_messages`
   * a safe point: the operator interjections that may join the turn join it first, and `messages`
   * lists every message of the run so far.
   */
  heartbeatTurn(run_id: string, request: HeartbeatTurnRequest): Promise<{ run_id: string; claim_id: string; lease_expires_at: string; messages?: MessageEnvelope[] }>;
  /** Applies the actions once; refused with `lease_lost` unless `claim_id` still holds the turn. */
  completeTurn(run_id: string, request: CompleteTurnRequest, options?: MutationOptions): Promise<{ run_id: string; applied: boolean }>;

  // introspection and health
  actorTree(agent_id: string): Promise<ActorNodeShape>;
  /**
   * Sends the inspection events of the agent's actors (`@statelyai/inspect` format, secrets
   * redacted) to `listener` until the returned function is called; the actors are observed only
   * while someone listens. Starts with every live actor as it is now (`@xstate.actor`).
   */
  inspect(agent_id: string, listener: (message: InspectionMessage) => void): Promise<() => void>;
  /** The events each of the agent's actors accepts in its current state, read from the machines. */
  acceptedEvents(agent_id: string): Promise<AgentAccepts>;
  readiness(): Promise<Readiness>;
  /**
   * Where a request for the agent is served (a cluster; docs/cluster-design.md step 6): here when
   * this node holds the agent's lease or could take it, else at its live holder's address.
   * Absent (or always `local`) with an embedded store: one node serves everything. A node
   * remembers for a short while where an agent another node holds is served; `fresh` asks the
   * database again (and remembers that).
   */
  route?(agent_id: string, options?: RouteOptions): Promise<AgentRoute>;
  /** The holder answered a request forwarded to it under `route` (2xx: it served it, so it held the agent then). */
  confirmRoute?(agent_id: string, route: { holder: string; url: string }): void;
  /** Where a create is served: at the holder of the agent it names (its `agent_id`, or the agent an earlier create with its Idempotency-Key created). */
  routeCreate?(agent_id: string | undefined, idempotency_key: string | undefined, options?: RouteOptions): Promise<AgentRoute>;
  /** Whether this runtime is one node of a cluster (a PostgreSQL store): requests may need forwarding. */
  readonly clustered?: boolean;
  /** The agent a capability token belongs to, as far as this node's roster knows (a cluster refreshes it on a miss). */
  callbackAgent?(token: string): Promise<string | null>;
  /** A cluster node: the advertised addresses of the other live nodes (a turn claim with no local offer asks them); none with an embedded store. */
  peers?(): Promise<string[]>;
  /** Stops accepting work, settles in-flight operations, flushes the store and releases the lease. */
  close(): Promise<void>;
}

/** `RuntimeApi.route`'s options. */
export interface RouteOptions {
  /** Not from what the node remembers: from the database (a forward failed, the holder said it does not hold the agent, a request forwarded here). */
  fresh?: boolean;
}

/** `RuntimeApi.route`: serve here, forward to the agent's holder, or 503 (its holder is live but not reachable). */
export type AgentRoute =
  | { kind: 'local' }
  | { kind: 'forward'; holder: string; url: string }
  | { kind: 'unavailable'; holder: string };
