import {
  CompleteWorkItemRequest,
  CreateTimerRequest,
  CreateTriggerRequest,
  CreateWaitRequest,
  CreateWorkItemRequest,
  PickWorkItemRequest,
  UpdateWorkItemRequest,
  type ExternalTriggerSummary,
  type Snapshot,
  type TimerRecord,
  type TriggerCapability,
  type WaitConditionRecord,
  type WorkItemView,
} from '../../domain/index.js';
import type { MutationOptions } from '../api.js';
import type { TimerAlarms } from '../host/alarms.js';
import type { AgentCells } from '../host/cells.js';
import { findTimer, findWorkItem } from '../records/lookups.js';
import { findSnapshot, migrateSnapshots, takeSnapshot, type SnapshotStamp } from '../records/snapshots.js';
import type { TimerRecords } from '../records/timers.js';
import { workItemView } from '../records/views.js';
import { provisionTrigger, resetDefaultTrigger, revokeTrigger, withoutToken } from '../records/triggers.js';
import { cancelWait, createWait } from '../records/waits.js';
import { completeWorkItem, createWorkItemRecord, pickWorkItem, updateWorkItem } from '../records/work-items.js';
import { refuseStopped } from './ingress.js';

export interface AgentRecordsDeps {
  cells: Pick<AgentCells, 'mutate' | 'doc' | 'isClosing'>;
  timers: Pick<TimerRecords, 'create' | 'cancel' | 'fire'>;
  alarms: Pick<TimerAlarms, 'arm'>;
  /** Who stamps the snapshots taken on request. */
  stamp: SnapshotStamp;
  /** Whether this instance may fire the agent's timers (it holds the store lease, or in a cluster the agent's). */
  mayFire(agentId: string): boolean;
}

/**
 * An agent's records as requested over the API — work items, waits, timers (and their alarms
 * firing), snapshots, triggers: each request parsed, each write in the agent's lane.
 */
export class AgentRecords {
  private readonly cells: AgentRecordsDeps['cells'];
  private readonly timers: AgentRecordsDeps['timers'];

  constructor(private readonly deps: AgentRecordsDeps) {
    this.cells = deps.cells;
    this.timers = deps.timers;
  }

  createWorkItem(agentId: string, request: CreateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = CreateWorkItemRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => workItemView(tx.doc, createWorkItemRecord(tx, req.objective)), options);
  }

  updateWorkItem(agentId: string, workItemId: string, request: UpdateWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = UpdateWorkItemRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => workItemView(tx.doc, updateWorkItem(tx, workItemId, req)), options);
  }

  pickWorkItem(agentId: string, workItemId: string, request: PickWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = PickWorkItemRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => workItemView(tx.doc, pickWorkItem(tx, workItemId, req)), options);
  }

  completeWorkItem(agentId: string, workItemId: string, request: CompleteWorkItemRequest, options: MutationOptions = {}): Promise<WorkItemView> {
    const req = CompleteWorkItemRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => workItemView(tx.doc, completeWorkItem(tx, workItemId, req)), options);
  }

  async listWorkItems(agentId: string): Promise<WorkItemView[]> {
    const doc = await this.cells.doc(agentId);
    return doc.work_items.map((w) => workItemView(doc, w));
  }

  async getWorkItem(agentId: string, workItemId: string): Promise<WorkItemView> {
    const doc = await this.cells.doc(agentId);
    return workItemView(doc, findWorkItem(doc, workItemId));
  }

  createWait(agentId: string, request: CreateWaitRequest, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    const req = CreateWaitRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => createWait(tx, req), options);
  }

  cancelWait(agentId: string, waitId: string, options: MutationOptions = {}): Promise<WaitConditionRecord> {
    return this.cells.mutate(agentId, async (tx) => cancelWait(tx, waitId), options);
  }

  createTimer(agentId: string, request: CreateTimerRequest, options: MutationOptions = {}): Promise<TimerRecord> {
    const req = CreateTimerRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => this.timers.create(tx, { duration_ms: req.duration_ms, ...(req.interval_ms ? { interval_ms: req.interval_ms } : {}), ...(req.summary ? { summary: req.summary } : {}) }), options);
  }

  cancelTimer(agentId: string, timerId: string, options: MutationOptions = {}): Promise<TimerRecord> {
    return this.cells.mutate(agentId, async (tx) => this.timers.cancel(tx, timerId), options);
  }

  async listTimers(agentId: string): Promise<TimerRecord[]> {
    return (await this.cells.doc(agentId)).timers;
  }

  async getTimer(agentId: string, timerId: string): Promise<TimerRecord> {
    return findTimer(await this.cells.doc(agentId), timerId);
  }

  /** An alarm fired: the timer fires in its agent's lane; an interval timer's next alarm is armed once that is durable. */
  async fireTimer(agentId: string, timerId: string, dueAt: string): Promise<void> {
    if (this.cells.isClosing || !this.deps.mayFire(agentId)) return;
    const next = await this.cells.mutate(agentId, async (tx) => this.timers.fire(tx, timerId, dueAt), { allowTerminated: false });
    if (next) this.deps.alarms.arm(agentId, timerId, next);
  }

  takeSnapshot(agentId: string, options: MutationOptions = {}): Promise<Snapshot> {
    return this.cells.mutate(agentId, async (tx) => takeSnapshot(tx, 'on_request', this.deps.stamp), options);
  }

  async listSnapshots(agentId: string): Promise<Snapshot[]> {
    return (await this.cells.doc(agentId)).snapshots;
  }

  async getSnapshot(agentId: string, snapshotId: string): Promise<Snapshot> {
    return findSnapshot(await this.cells.doc(agentId), snapshotId);
  }

  /** `holon-xstate migrate`: the agent's intact snapshots of another schema version, rewritten at the current one. */
  migrate(agentId: string): Promise<{ migrated: number; skipped_corrupted: number }> {
    return this.cells.mutate(agentId, async (tx) => migrateSnapshots(tx));
  }

  createTrigger(agentId: string, request: CreateTriggerRequest, options: MutationOptions = {}): Promise<TriggerCapability> {
    const req = CreateTriggerRequest.parse(request);
    return this.cells.mutate(agentId, async (tx) => {
      refuseStopped(tx);
      return provisionTrigger(tx, req.delivery_mode, false);
    }, { ...options, recordAs: withoutToken });
  }

  revokeTrigger(agentId: string, triggerId: string, options: MutationOptions = {}): Promise<ExternalTriggerSummary> {
    return this.cells.mutate(agentId, async (tx) => revokeTrigger(tx, triggerId), options);
  }

  resetCallback(agentId: string, options: MutationOptions = {}): Promise<TriggerCapability> {
    return this.cells.mutate(agentId, async (tx) => {
      refuseStopped(tx);
      return resetDefaultTrigger(tx);
    }, { ...options, recordAs: withoutToken });
  }
}
