import type { Readable } from 'node:stream';
import type {
  AbortRunRequest,
  AcceptedEvents,
  ActorNodeShape,
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
  InvokeAgentRequest,
  MessageAccepted,
  PageQuery,
  PickWorkItemRequest,
  PromptRequest,
  Readiness,
  Snapshot,
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
  TurnOffer,
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

/** Options shared by mutating agent operations (optimistic concurrency). */
export interface MutationOptions {
  /** Refuse with `version_conflict` unless the agent's `state_version` equals this. */
  expected_version?: number;
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
  listAgents(query: PageQuery): Promise<Page<AgentListEntry>>;
  getSummary(agent_id: string): Promise<AgentSummary>;
  getState(agent_id: string): Promise<AgentStateView>;
  /** The public events the agent's current state accepts (`snapshot.can`), each with the requests that send it. */
  accepts(agent_id: string): Promise<AcceptedEvents>;
  control(agent_id: string, request: ControlRequest): Promise<AgentSummary>;
  transition(agent_id: string, request: TransitionRequest): Promise<{ record: TransitionRecord; replayed: boolean }>;
  listTransitions(agent_id: string, query: { after_seq?: number; limit: number }): Promise<TransitionRecord[]>;
  takeSnapshot(agent_id: string): Promise<Snapshot>;
  listSnapshots(agent_id: string): Promise<Snapshot[]>;
  getSnapshot(agent_id: string, snapshot_id: string): Promise<Snapshot>;
  abortRun(agent_id: string, request: AbortRunRequest): Promise<{ agent_id: string; run_id: string; aborted: true }>;
  terminate(agent_id: string): Promise<AgentSummary>;

  // messages, wakes, work
  prompt(agent_id: string, request: PromptRequest, options?: MutationOptions): Promise<MessageAccepted>;
  enqueue(agent_id: string, request: EnqueueRequest): Promise<MessageAccepted>;
  wake(agent_id: string, request: WakeRequest): Promise<WakeResult>;
  createWorkItem(agent_id: string, request: CreateWorkItemRequest): Promise<WorkItemView>;
  updateWorkItem(agent_id: string, work_item_id: string, request: UpdateWorkItemRequest): Promise<WorkItemView>;
  pickWorkItem(agent_id: string, work_item_id: string, request: PickWorkItemRequest): Promise<WorkItemView>;
  completeWorkItem(agent_id: string, work_item_id: string, request: CompleteWorkItemRequest): Promise<WorkItemView>;
  listWorkItems(agent_id: string): Promise<WorkItemView[]>;
  getWorkItem(agent_id: string, work_item_id: string): Promise<WorkItemView>;
  createWait(agent_id: string, request: CreateWaitRequest): Promise<WaitConditionRecord>;
  cancelWait(agent_id: string, wait_id: string): Promise<WaitConditionRecord>;
  createTimer(agent_id: string, request: CreateTimerRequest): Promise<TimerRecord>;
  cancelTimer(agent_id: string, timer_id: string): Promise<TimerRecord>;
  listTimers(agent_id: string): Promise<TimerRecord[]>;
  getTimer(agent_id: string, timer_id: string): Promise<TimerRecord>;

  // tasks (seed 004)
  execCommand(agent_id: string, request: ExecCommandRequest): Promise<TaskRecord>;
  invokeAgent(agent_id: string, request: InvokeAgentRequest): Promise<TaskRecord>;
  listTasks(agent_id: string): Promise<TaskRecord[]>;
  getTask(agent_id: string, task_id: string): Promise<TaskRecord>;
  taskOutput(agent_id: string, task_id: string, query: TaskOutputQuery): Promise<TaskOutputResult>;
  taskArtifact(agent_id: string, task_id: string): Promise<Readable>;
  taskInput(agent_id: string, task_id: string, request: TaskInputRequest): Promise<TaskInputResult>;
  stopTask(agent_id: string, task_id: string): Promise<TaskStopResult>;

  // external triggers (seed 003)
  createTrigger(agent_id: string, request: CreateTriggerRequest): Promise<TriggerCapability>;
  revokeTrigger(agent_id: string, trigger_id: string): Promise<ExternalTriggerSummary>;
  resetCallback(agent_id: string): Promise<TriggerCapability>;
  /** Fails with `forbidden` for an unknown, revoked or wrong-mode token; never echoes the token. */
  deliverCallback(mode: 'wake_hint' | 'enqueue_message', token: string, body: CallbackBody): Promise<CallbackResult>;

  // events
  eventsPage(agent_id: string, query: EventsQuery): Promise<EventsPage>;
  /** Live events of one agent (or all agents with `null`), delivered after they are durable. */
  subscribe(agent_id: string | null, listener: (event: AgentEvent) => void): () => void;

  // turn workers
  claimTurn(request: ClaimTurnRequest, signal?: AbortSignal): Promise<TurnOffer | null>;
  heartbeatTurn(run_id: string): Promise<{ run_id: string; lease_expires_at: string }>;
  completeTurn(run_id: string, request: CompleteTurnRequest): Promise<{ run_id: string; applied: boolean }>;

  // introspection and health
  actorTree(agent_id: string): Promise<ActorNodeShape>;
  readiness(): Promise<Readiness>;
  /**
   * Runs `operation` once per `key`: a retry with the same key and fingerprint gets the stored
   * result (`replayed: true`); the same key with another fingerprint fails with `idempotency_conflict`.
   * Stored durably, so a replay survives a restart.
   */
  idempotent<T>(key: string, fingerprint: string, operation: () => Promise<T>): Promise<{ value: T; replayed: boolean }>;
  /** Stops accepting work, settles in-flight operations, flushes the store and releases the lease. */
  close(): Promise<void>;
}
