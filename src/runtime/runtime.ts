import type { Readable } from 'node:stream';
import { agentMachine, continuationMachine, taskMachine } from '../../machines/index.js';
import { isTerminalTask } from '../../machines/contracts/index.js';
import {
  AgentListQuery,
  ClaimTurnRequest,
  DomainError,
  EventsQuery,
  HeartbeatTurnRequest,
  type MessageEnvelope,
  type AbortRunRequest, type ActorNodeShape, type AgentAccepts, type AgentEvent, type AgentListEntry, type AgentStateView, type AgentSummary,
  type CallbackResult, type CompleteTurnRequest, type ControlRequest, type CreateAgentRequest, type EnqueueRequest, type EventsPage,
  type ExecCommandRequest, type ExternalTriggerSummary, type InvokeAgentRequest, type MessageAccepted, type PromptRequest, type Readiness,
  type Snapshot, type StateAccepts, type TaskInputRequest, type TaskInputResult, type TaskOutputQuery, type TaskOutputResult, type TaskRecord,
  type TaskStopResult, type TimerRecord, type TransitionRecord, type TransitionRequest, type TriggerCapability, type TurnClaim,
  type WaitConditionRecord, type WakeRequest, type WakeResult, type WorkItemView, type CompleteWorkItemRequest, type CreateTimerRequest,
  type CreateWaitRequest, type CreateTriggerRequest, type CreateWorkItemRequest, type PickWorkItemRequest, type UpdateWorkItemRequest,
} from '../domain/index.js';
import type { Store } from '../store/store.js';
import { createStore } from '../store/index.js';
import { agentAccepts } from './agent/accepted-events.js';
import { acceptsOf } from './agent/accepts.js';
import type { AgentRoute, CallbackBody, MutationOptions, Page, RouteOptions, RuntimeApi } from './api.js';
import { isoText, systemClock, type Clock } from './clock.js';
import { TimerAlarms } from './host/alarms.js';
import { AgentCells } from './host/cells.js';
import { CreateKeys } from './host/create-keys.js';
import { EventBus } from './host/event-bus.js';
import { GlobalEvents } from './host/global-events.js';
import { InboxBounds } from './host/inbox-bounds.js';
import { InspectionHub, type InspectionListener } from './host/inspection-hub.js';
import { LeaseKeeper } from './host/lease-keeper.js';
import { placementFor, type Placement } from './host/placement.js';
import { CommandProcesses } from './host/processes.js';
import { ResidentRoster } from './host/resident-roster.js';
import { ShardPool } from './host/shards.js';
import { TurnOffers } from './host/turn-offers.js';
import { AgentRecords } from './flows/agent-records.js';
import { AgentCreation } from './flows/create-agent.js';
import { Ingress } from './flows/ingress.js';
import { InvocationResults } from './flows/invocation-results.js';
import { Lifecycle } from './flows/lifecycle.js';
import { DUE_AGENT, Recovery } from './flows/recovery.js';
import { Scheduler } from './flows/scheduler.js';
import { TaskProcesses } from './flows/task-processes.js';
import { TaskRequests } from './flows/task-requests.js';
import { Transitions } from './flows/transitions.js';
import { Turns } from './flows/turns.js';
import { resolveOptions, type ResolvedOptions, type RuntimeOptions } from './options.js';
import { persistOnce } from './persist-once.js';
import { readinessOf } from './host/readiness.js';
import { findTask } from './records/lookups.js';
import type { SnapshotStamp } from './records/snapshots.js';
import { TimerRecords } from './records/timers.js';
import { actorTree, assembleSummary, eventsPageOf, stateView } from './records/views.js';
import { ScriptedRunner } from './runners/scripted-runner.js';
import type { TurnRunner } from './runners/turn-runner.js';

export type { EffectFault, RuntimeOptions } from './options.js';

/**
 * The runtime host: the `RuntimeApi` facade over the parts wired here, in dependency order (host
 * resources, then records, then the flows that combine them). Each method parses its request,
 * picks the seam — `cells.mutate` for a write (the agent's lane and its `Tx`), the committed
 * document for a read — and calls one service. `src/runtime/README.md` maps the parts.
 */
export class Runtime implements RuntimeApi {
  readonly nodeId: string;
  readonly startedAt: Date;
  private readonly bus = new EventBus();
  private readonly globalEvents: GlobalEvents;
  private readonly roster = new ResidentRoster();
  private readonly lease: LeaseKeeper;
  private readonly shards: ShardPool;
  private readonly alarms: TimerAlarms;
  /** Boot arms one alarm per never-loaded agent with a timer: at its due time it loads the agent, whose load arms its timers. */
  private readonly dueAgents: TimerAlarms;
  private readonly offers: TurnOffers;
  /** Live inspection of the agents someone watches (`inspect`); nothing for the others. */
  private readonly inspection: InspectionHub;
  private readonly processes: CommandProcesses;
  private readonly cells: AgentCells;
  private readonly logic = agentMachine.provide({ actors: { task: persistOnce(taskMachine), continuation: persistOnce(continuationMachine) } });
  private readonly timers: TimerRecords;
  private readonly records: AgentRecords;
  private readonly turns: Turns;
  private readonly lifecycle: Lifecycle;
  private readonly scheduler: Scheduler;
  private readonly ingress: Ingress;
  private readonly creation: AgentCreation;
  private readonly keys: CreateKeys;
  private readonly taskProcesses: TaskProcesses;
  private readonly taskRequests: TaskRequests;
  private readonly transitions: Transitions;
  private readonly recovery: Recovery;
  /** The store lease, or in a cluster (`store.kind === 'postgres'`) this node's agent leases, claims and routing. */
  private readonly placement: Placement;
  private lastCommitAt: string | null = null;
  /** Who stamps this instance's snapshots: this node, under its current fencing token. */
  private readonly stamp: SnapshotStamp;

  private constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    runner: TurnRunner,
    private readonly options: ResolvedOptions,
    nodeId: string,
  ) {
    this.nodeId = nodeId;
    this.startedAt = clock.now();
    this.stamp = { nodeId, fencingToken: (agentId) => this.placement.token(agentId) };
    const now = () => this.clock.now();
    // Host resources.
    this.globalEvents = new GlobalEvents(this.bus, store);
    this.lease = new LeaseKeeper(store, nodeId, options.leaseTtlMs, clock);
    // Read when used: the parts are built below.
    const parts = () => ({ cells: this.cells, alarms: this.alarms, turns: this.turns, processes: this.processes, shards: this.shards, roster: this.roster });
    const placement = (this.placement = placementFor({ store, nodeId, ttlMs: options.leaseTtlMs, clock, lease: this.lease, roster: this.roster, parts }));
    const cluster = placement.cluster;
    this.alarms = new TimerAlarms((agentId, timerId, dueAt) => void this.records.fireTimer(agentId, timerId, dueAt).catch(() => undefined), now);
    this.dueAgents = new TimerAlarms((agentId) => void this.cells.load(agentId).catch(() => undefined), now);
    this.offers = new TurnOffers(now);
    this.processes = new CommandProcesses(options.dataDir, options.killGraceMs);
    this.shards = new ShardPool(options.shardCapacity, (agentId, error) => void this.recovery.onAgentFailed(agentId, error));
    this.inspection = new InspectionHub((agentId) => this.cells.get(agentId)?.actor ?? null, () => this.clock.now().getTime());
    this.timers = new TimerRecords(this.alarms);
    this.cells = new AgentCells({
      store,
      roster: this.roster,
      residentQuietAgents: options.residentQuietAgents,
      env: {
        store,
        clock,
        bus: this.bus,
        // Only the children persist once: the agent's own snapshot changes with nearly every commit.
        logic: this.logic,
        ...(options.inspect ? { inspect: options.inspect } : {}),
        fence: (agentId) => placement.fence(agentId),
        attached: (agentId, actor) => {
          this.inspection.attached(agentId, actor);
          this.shards.attach(agentId, actor);
        },
        detached: (agentId) => {
          this.inspection.detached(agentId);
          this.shards.detach(agentId);
        },
        onCommitted: (cell, roster, rosterJson) => {
          this.lastCommitAt = isoText(this.clock.now());
          if (roster) this.roster.set(cell.id, roster, rosterJson);
        },
        commitFailed: (error, agentId) => {
          if (error instanceof DomainError && error.code === 'lease_lost') placement.fenced(agentId);
        },
      },
      loaded: (cell) => {
        this.dueAgents.disarm(cell.id, DUE_AGENT);
        this.timers.armAll(cell.doc);
        // In a cluster every load is under a lease just taken: the takeover recovers what the last holder left.
        if (cluster) this.recovery.takeOver(cell);
      },
      ...(placement.take && placement.untake ? { take: placement.take, untake: placement.untake } : {}),
      retired: (cell) => {
        this.shards.forget(cell.id);
        placement.retired(cell);
      },
      kick: (agentId) => this.scheduler.kick(agentId),
    });
    // Flows, each over the records it combines.
    this.records = new AgentRecords({ cells: this.cells, timers: this.timers, alarms: this.alarms, stamp: this.stamp, mayFire: (agentId) => !this.lease.isLost && this.placement.mayFire(agentId) });
    const invocations = new InvocationResults(this.cells);
    this.turns = new Turns({ cells: this.cells, runner, offers: this.offers, turnLeaseMs: options.turnLeaseMs, turnMaxMessages: options.turnMaxMessages, subscribe: (agentId, listener) => this.bus.subscribe(agentId, listener), timers: this.timers, invocations, launch: (agentId, taskId) => this.taskProcesses.launchAfterCommit(agentId, taskId), claimNext: (tx) => this.scheduler.claimOn(tx) });
    this.lifecycle = new Lifecycle({ options, stamp: this.stamp, timers: this.timers, processes: this.processes, turns: this.turns });
    this.scheduler = new Scheduler(this.cells, this.lifecycle, this.turns, () => !this.lease.isLost);
    this.ingress = new Ingress(this.cells, (token) => placement.callbackAgent(token), new InboxBounds({ maxMessages: options.inboxMaxMessages, maxBytes: options.inboxMaxBytes, maxInFlight: options.ingressMaxInFlight }));
    const writable = () => placement.writable();
    this.keys = new CreateKeys(store, writable, placement.keyLease);
    this.creation = new AgentCreation(this.cells, this.keys, this.lifecycle, clock, writable);
    this.taskProcesses = new TaskProcesses({ cells: this.cells, processes: this.processes, lease: placement.commandLease, bus: this.bus, maxRunningTasks: options.maxRunningTasks });
    this.taskRequests = new TaskRequests({ cells: this.cells, lifecycle: this.lifecycle, processes: this.processes, taskProcesses: this.taskProcesses, creation: this.creation, ingress: this.ingress });
    this.transitions = new Transitions(this.cells, this.lifecycle, this.turns, store);
    this.recovery = new Recovery({ store, cells: this.cells, roster: this.roster, dueAgents: this.dueAgents, lifecycle: this.lifecycle, turns: this.turns, invocations });
    // Seed 002: once the lease is lost, no more external side effects from this instance.
    this.lease.onLost(() => {
      this.alarms.disarmAll();
      this.dueAgents.disarmAll();
      this.turns.abortAll();
      this.processes.abandonAll();
    });
  }

  static async open(options: RuntimeOptions = {}): Promise<Runtime> {
    const dataDir = options.dataDir ?? './data';
    const store = options.store ?? createStore({ kind: 'lowdb', dataDir });
    const resolved = resolveOptions(options, store, dataDir);
    const runtime = new Runtime(store, options.clock ?? systemClock, options.runner ?? new ScriptedRunner(), resolved, options.nodeId ?? `node-${process.pid}`);
    await store.open();
    const recovery = runtime.recovery;
    await runtime.placement.boot({ recoverAll: () => recovery.recoverAll(), leaseWaitMs: resolved.leaseWaitMs, onLeaseWait: options.onLeaseWait, advertiseUrl: options.advertiseUrl });
    return runtime;
  }

  /**
   * A cluster node registers under the address the other nodes forward its agents' requests to
   * (`serve` knows it once listening); a no-op with an embedded store. Unregistered, a node still
   * runs, renews and claims agents, but the others answer 503 for the agents it holds.
   */
  async joinCluster(advertiseUrl: string): Promise<void> {
    await this.placement.cluster?.register(advertiseUrl);
  }

  /** Where a request for the agent is served (docs/cluster-design.md step 6); always here with an embedded store. */
  route(agentId: string, options: RouteOptions = {}): Promise<AgentRoute> {
    return this.placement.route(agentId, this.cells.isClosing, options);
  }

  confirmRoute(agentId: string, route: { holder: string; url: string }): void {
    this.placement.cluster?.confirmRoute(agentId, route.holder, route.url);
  }

  async routeCreate(agentId: string | undefined, key: string | undefined, options: RouteOptions = {}): Promise<AgentRoute> {
    const named = key === undefined ? agentId : ((await this.keys.agentOf(key)) ?? agentId);
    return named === undefined ? { kind: 'local' } : this.route(named, options);
  }

  /** The agent a capability token belongs to; a cluster node reads the roster again when it does not know the token. */
  callbackAgent(token: string): Promise<string | null> {
    return this.placement.callbackAgent(token);
  }

  peers(): Promise<string[]> {
    return this.placement.peers();
  }

  get clustered(): boolean {
    return this.placement.cluster !== null;
  }

  get storeKind(): string {
    return this.store.kind;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  // ---------------------------------------------------------------- agents

  createAgent(request: CreateAgentRequest, options: { idempotency_key?: string } = {}) {
    return this.creation.create(request, options);
  }

  /** Served from roster entries (resident, or a cluster node's store): listing loads no document. */
  async listAgents(query: AgentListQuery): Promise<Page<AgentListEntry>> {
    const q = AgentListQuery.parse(query);
    return this.placement.listAgents(q.cursor, q.limit, { q: q.q, status: q.status });
  }

  async getSummary(agentId: string): Promise<AgentSummary> {
    return assembleSummary(await this.cells.cell(agentId));
  }

  async accepts(agentId: string): Promise<StateAccepts> {
    return acceptsOf(this.logic, await this.cells.cell(agentId));
  }

  async getState(agentId: string): Promise<AgentStateView> {
    return stateView(await this.cells.cell(agentId));
  }

  control(agentId: string, request: ControlRequest, options: MutationOptions = {}): Promise<AgentSummary> {
    return this.transitions.control(agentId, request, options);
  }

  transition(agentId: string, request: TransitionRequest, options: MutationOptions = {}): Promise<{ record: TransitionRecord; replayed: boolean }> {
    return this.transitions.transition(agentId, request, options);
  }

  /** The reason chain, read from the event log (the document keeps only recent records). */
  listTransitions(agentId: string, query: { after_seq?: number; limit: number }): Promise<TransitionRecord[]> {
    return this.transitions.list(agentId, query);
  }

  takeSnapshot(agentId: string, options: MutationOptions = {}): Promise<Snapshot> {
    return this.records.takeSnapshot(agentId, options);
  }

  listSnapshots(agentId: string): Promise<Snapshot[]> {
    return this.records.listSnapshots(agentId);
  }

  getSnapshot(agentId: string, snapshotId: string): Promise<Snapshot> {
    return this.records.getSnapshot(agentId, snapshotId);
  }

  /** `holon-xstate migrate`: the agent's intact snapshots of another schema version, rewritten at the current one. */
  migrate(agentId: string): Promise<{ migrated: number; skipped_corrupted: number }> {
    return this.records.migrate(agentId);
  }

  abortRun(agentId: string, request: AbortRunRequest, options: MutationOptions = {}) {
    return this.transitions.abortRun(agentId, request, options);
  }

  terminate(agentId: string, options: MutationOptions = {}): Promise<AgentSummary> {
    return this.transitions.terminate(agentId, options);
  }

  // ---------------------------------------------------------------- messages and wakes

  prompt(agentId: string, request: PromptRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    return this.ingress.prompt(agentId, request, options);
  }

  enqueue(agentId: string, request: EnqueueRequest, options: MutationOptions = {}): Promise<MessageAccepted> {
    return this.ingress.enqueue(agentId, request, options);
  }

  wake(agentId: string, request: WakeRequest, options: MutationOptions = {}): Promise<WakeResult> {
    return this.ingress.wake(agentId, request, options);
  }

  // ---------------------------------------------------------------- work items

  createWorkItem(agentId: string, request: CreateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    return this.records.createWorkItem(agentId, request, options);
  }

  updateWorkItem(agentId: string, workItemId: string, request: UpdateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    return this.records.updateWorkItem(agentId, workItemId, request, options);
  }

  pickWorkItem(agentId: string, workItemId: string, request: PickWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    return this.records.pickWorkItem(agentId, workItemId, request, options);
  }

  completeWorkItem(agentId: string, workItemId: string, request: CompleteWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    return this.records.completeWorkItem(agentId, workItemId, request, options);
  }

  listWorkItems(agentId: string): Promise<WorkItemView[]> {
    return this.records.listWorkItems(agentId);
  }

  getWorkItem(agentId: string, workItemId: string): Promise<WorkItemView> {
    return this.records.getWorkItem(agentId, workItemId);
  }

  // ---------------------------------------------------------------- waits and timers

  createWait(agentId: string, request: CreateWaitRequest, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    return this.records.createWait(agentId, request, options);
  }

  cancelWait(agentId: string, waitId: string, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    return this.records.cancelWait(agentId, waitId, options);
  }

  createTimer(agentId: string, request: CreateTimerRequest, options: MutationOptions = {}): Promise<TimerRecord> {
    return this.records.createTimer(agentId, request, options);
  }

  cancelTimer(agentId: string, timerId: string, options: MutationOptions = {}): Promise<TimerRecord> {
    return this.records.cancelTimer(agentId, timerId, options);
  }

  listTimers(agentId: string): Promise<TimerRecord[]> {
    return this.records.listTimers(agentId);
  }

  getTimer(agentId: string, timerId: string): Promise<TimerRecord> {
    return this.records.getTimer(agentId, timerId);
  }

  // ---------------------------------------------------------------- tasks

  execCommand(agentId: string, request: ExecCommandRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    return this.taskRequests.execCommand(agentId, request, options);
  }

  invokeAgent(agentId: string, request: InvokeAgentRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    return this.taskRequests.invokeAgent(agentId, request, options);
  }

  async listTasks(agentId: string): Promise<TaskRecord[]> {
    return (await this.cells.doc(agentId)).tasks.filter((t) => !isTerminalTask(t.status)).slice(0, 100);
  }

  async getTask(agentId: string, taskId: string): Promise<TaskRecord> {
    return findTask(await this.cells.doc(agentId), taskId);
  }

  taskOutput(agentId: string, taskId: string, query: TaskOutputQuery): Promise<TaskOutputResult> {
    return this.taskProcesses.output(agentId, taskId, query);
  }

  async taskArtifact(agentId: string, taskId: string): Promise<Readable> {
    findTask(await this.cells.doc(agentId), taskId);
    return this.processes.artifact(agentId, taskId);
  }

  taskInput(agentId: string, taskId: string, request: TaskInputRequest, options: MutationOptions = {}): Promise<TaskInputResult> {
    return this.taskProcesses.input(agentId, taskId, request, options);
  }

  stopTask(agentId: string, taskId: string, options: MutationOptions = {}): Promise<TaskStopResult> {
    return this.taskProcesses.stop(agentId, taskId, options);
  }

  // ---------------------------------------------------------------- triggers

  createTrigger(agentId: string, request: CreateTriggerRequest, options: MutationOptions = {}): Promise<TriggerCapability> {
    return this.records.createTrigger(agentId, request, options);
  }

  revokeTrigger(agentId: string, triggerId: string, options: MutationOptions = {}): Promise<ExternalTriggerSummary> {
    return this.records.revokeTrigger(agentId, triggerId, options);
  }

  resetCallback(agentId: string, options: MutationOptions = {}): Promise<TriggerCapability> {
    return this.records.resetCallback(agentId, options);
  }

  deliverCallback(mode: 'wake_hint' | 'enqueue_message', token: string, body: CallbackBody): Promise<CallbackResult> {
    return this.ingress.deliverCallback(mode, token, body);
  }

  // ---------------------------------------------------------------- events

  async eventsPage(agentId: string, query: EventsQuery): Promise<EventsPage> {
    const q = EventsQuery.parse(query);
    await this.cells.cell(agentId);
    const page = await this.store.readEvents(agentId, { ...(q.after_seq !== undefined ? { after_seq: q.after_seq } : {}), ...(q.before_seq !== undefined ? { before_seq: q.before_seq } : {}), limit: q.limit, order: q.order });
    return eventsPageOf(page, q);
  }

  /** One agent's committed events, or (`null`) every agent's: in a cluster also those other nodes commit. */
  subscribe(agentId: string | null, listener: (event: AgentEvent) => void): () => void {
    return agentId === null ? this.globalEvents.subscribe(listener) : this.bus.subscribe(agentId, listener);
  }

  allEventsReady(): Promise<void> {
    return this.globalEvents.ready();
  }

  // ---------------------------------------------------------------- turn workers

  async claimTurn(request: ClaimTurnRequest, signal?: AbortSignal, options: Pick<MutationOptions, 'idempotency'> = {}): Promise<TurnClaim | null> {
    const req = ClaimTurnRequest.parse(request);
    return this.offers.claim(req.agent_ids ?? null, req.wait_ms, signal, options.idempotency);
  }

  heartbeatTurn(runId: string, request: HeartbeatTurnRequest): Promise<{ run_id: string; claim_id: string; lease_expires_at: string; messages?: MessageEnvelope[] }> {
    return this.turns.heartbeat(runId, request);
  }

  completeTurn(runId: string, request: CompleteTurnRequest, options: MutationOptions = {}): Promise<{ run_id: string; applied: boolean }> {
    return this.turns.complete(runId, request, options);
  }

  // ---------------------------------------------------------------- introspection and health

  async actorTree(agentId: string): Promise<ActorNodeShape> {
    return actorTree(agentId, await this.cells.cell(agentId));
  }

  async inspect(agentId: string, listener: InspectionListener): Promise<() => void> {
    await this.cells.cell(agentId);
    return this.inspection.watch(agentId, listener);
  }

  async acceptedEvents(agentId: string): Promise<AgentAccepts> {
    return agentAccepts(await this.cells.cell(agentId));
  }

  readiness(): Promise<Readiness> {
    const progress = { last_commit_at: this.lastCommitAt, stalled_agents: this.cells.stalled(this.clock.now().getTime() - 5 * 60_000), stranded_agents: this.roster.stranded() };
    return readinessOf({ store: this.store, nodeId: this.nodeId, lease: this.lease, cluster: this.placement.cluster, progress });
  }

  async close(): Promise<void> {
    if (this.cells.isClosing) return;
    const settled = this.cells.close();
    this.alarms.disarmAll();
    this.dueAgents.disarmAll();
    this.offers.close();
    this.turns.abortAll();
    // Settle every lane, then stop processes: their tasks become interrupted on the next start.
    await settled;
    await this.processes.stopAll();
    // The supervisors drain: they refuse new agents while every live one is detached, then stop.
    this.shards.drain(() => this.cells.passivateAll());
    // A cluster node gives every agent back, with when it needs a node again: at once for one
    // with work in doubt (a claim recovers it), else at its next timer.
    await this.placement.close();
    await this.store.close();
  }
}
