import { hostname } from 'node:os';
import { isTerminalTask } from '../../../machines/contracts/index.js';
import {
  DomainError,
  TaskInputRequest,
  TaskOutputQuery,
  type AgentEvent,
  type TaskInputResult,
  type TaskOutputResult,
  type TaskRecord,
  type TaskStopResult,
} from '../../domain/index.js';
import type { Tx } from '../agent/tx.js';
import type { MutationOptions } from '../api.js';
import type { AgentCells } from '../host/cells.js';
import type { EventBus } from '../host/event-bus.js';
import type { LeaseKeeper } from '../host/lease-keeper.js';
import type { CommandProcesses } from '../host/processes.js';
import type { CommandHandle, CommandResult } from '../process/index.js';
import { waitForOutput } from '../process/index.js';
import { findEffect, finishEffect, startCommandKey } from '../records/effects-ledger.js';
import { findTask } from '../records/lookups.js';
import { finishTaskRecord, isRunningCommand, recordCommandResult } from '../records/tasks.js';
import { SoonBatches } from '../soon.js';

/** A command that ended, waiting to be recorded. */
interface FinishedCommand {
  taskId: string;
  handle: CommandHandle;
  result: CommandResult;
}

export interface TaskProcessesDeps {
  cells: Pick<AgentCells, 'cell' | 'get' | 'mutate' | 'mutateCell' | 'isClosing'>;
  processes: CommandProcesses;
  lease: Pick<LeaseKeeper, 'isLost' | 'stillHeld' | 'markLost'>;
  bus: Pick<EventBus, 'until'>;
  maxRunningTasks: number;
}

/**
 * Command tasks as processes: launched once their creation is durable, their results recorded in
 * batches, and their input, stop and output while they run.
 */
export class TaskProcesses {
  /**
   * Tasks whose creation is durable, to launch: one operation per agent launches every task added
   * by then. Not retried: a launch whose commit failed may have started processes (the recovery
   * of an in-doubt start decides about them, never a second start); a result recorded later
   * launches what is still queued.
   */
  private readonly launches = new SoonBatches<string>((agentId, take) => this.launchTasks(agentId, take), undefined, { retry: false });
  /** Commands that ended, to record (retried on failure: recording a result twice changes nothing). */
  private readonly results = new SoonBatches<FinishedCommand>((agentId, take) => this.recordResults(agentId, take));

  constructor(private readonly deps: TaskProcessesDeps) {}

  /**
   * Launches the task once the operation creating it is done. The launch is an operation of its
   * own, which starts only once the commit recording the start is durable (never pipelined), so a
   * crash cannot leave a process without its record; tasks created meanwhile share it. A task
   * whose launch did not run (a closing runtime) waits for the agent's next launch.
   */
  launchAfterCommit(agentId: string, taskId: string): void {
    this.launches.add(agentId, taskId);
  }

  async input(agentId: string, taskId: string, request: TaskInputRequest, options: MutationOptions = {}): Promise<TaskInputResult> {
    const req = TaskInputRequest.parse(request);
    return this.deps.cells.mutate(agentId, async (tx) => {
      const task = findTask(tx.doc, taskId);
      const live = this.deps.processes.get(taskId);
      if (!task.accepts_input || task.status !== 'running' || !live) {
        throw new DomainError('task_not_accepting_input', `task ${taskId} does not accept input (accepts_input=${task.accepts_input}, status=${task.status})`);
      }
      const bytes = await live.write(req.text);
      tx.tellChild(taskId, { type: 'INPUT' });
      tx.emit('task_input', { task_id: taskId, bytes });
      return { task, accepted_input: true, bytes_written: bytes };
    }, options);
  }

  async stop(agentId: string, taskId: string, options: MutationOptions = {}): Promise<TaskStopResult> {
    let force = false;
    const task = await this.deps.cells.mutate(agentId, async (tx) => {
      const task = findTask(tx.doc, taskId);
      if (isTerminalTask(task.status)) return task;
      const live = this.deps.processes.get(taskId);
      if (task.status === 'cancelling') force = true;
      tx.tellChild(taskId, { type: 'STOP' });
      if (!live) {
        finishTaskRecord(tx, task, { status: 'cancelled', exit_code: null, reason: 'stopped' });
        return task;
      }
      task.status = 'cancelling';
      task.updated_at = tx.now.toISOString();
      tx.emit('task_status_changed', { task_id: taskId, status: 'cancelling', force });
      void live.stop();
      return task;
    }, { ...options, allowTerminated: true });
    return { task, stop_requested: true, force_stop_requested: force };
  }

  async output(agentId: string, taskId: string, query: TaskOutputQuery): Promise<TaskOutputResult> {
    const q = TaskOutputQuery.parse(query);
    const deadline = Date.now() + q.timeout_ms;
    const processes = this.deps.processes;
    const statusOf = async () => findTask((await this.deps.cells.cell(agentId)).doc, taskId).status;
    const queued = (await statusOf()) === 'queued' && !processes.get(taskId);
    let retrieval: TaskOutputResult['retrieval_status'] = 'success';
    if (q.block) {
      // A queued task is waited for like a running one: until it starts (or ends), then for output
      // (all of it counts as new), then, if its process ended, until its result is recorded.
      if (queued) await this.untilTaskStatus(agentId, taskId, (status) => status !== 'queued', deadline);
      const live = processes.get(taskId);
      if (live) {
        const outcome = await waitForOutput(live, { sinceBytes: queued ? 0 : live.outputBytes, timeoutMs: deadline - Date.now() });
        if (outcome === 'timeout') retrieval = 'timeout';
      }
    } else if (processes.get(taskId) || queued) retrieval = 'not_ready';
    let view = await processes.output(agentId, taskId, q.max_bytes);
    let task = findTask((await this.deps.cells.cell(agentId)).doc, taskId);
    if (q.block && !view.live && !isTerminalTask(task.status)) {
      // Its process ended (maybe while the output above was read): its result is on its way to
      // the record, so a blocking read waits for that, then reads once more.
      await this.untilTaskStatus(agentId, taskId, isTerminalTask, deadline);
      view = await processes.output(agentId, taskId, q.max_bytes);
      task = findTask((await this.deps.cells.cell(agentId)).doc, taskId);
    }
    if (!view.live) retrieval = isTerminalTask(task.status) ? 'success' : q.block ? 'timeout' : 'not_ready';
    return {
      task_id: taskId,
      status: task.status,
      retrieval_status: retrieval,
      output_preview: view.preview,
      output_bytes: view.output_bytes,
      truncated: view.output_bytes > Buffer.byteLength(view.preview),
      exit_code: task.exit_code,
      artifact: { path: `artifacts/${agentId}/${taskId}.log`, bytes: view.artifact_bytes },
    };
  }

  /** Waits until the task's committed status satisfies `reached`, or `deadline` (epoch ms) passes. */
  private async untilTaskStatus(agentId: string, taskId: string, reached: (status: TaskRecord['status']) => boolean, deadline: number): Promise<void> {
    const now = () => {
      const status = this.deps.cells.get(agentId)?.doc.tasks.find((t) => t.id === taskId)?.status;
      return status === undefined || reached(status);
    };
    const moved = (event: AgentEvent) => event.type === 'task_status_changed' && event.payload['task_id'] === taskId && reached(event.payload['status'] as TaskRecord['status']);
    await this.deps.bus.until(agentId, moved, deadline - Date.now(), now);
  }

  private async launchTasks(agentId: string, take: () => string[]): Promise<void> {
    if (this.deps.lease.isLost || this.deps.cells.isClosing) return;
    const cell = await this.deps.cells.cell(agentId);
    await this.deps.cells.mutateCell(cell, async (tx) => {
      const taskIds = take();
      // A command starts before the commit that records it: a fenced instance must learn first.
      if (!(await this.deps.lease.stillHeld(agentId))) return this.deps.lease.markLost(agentId);
      for (const taskId of taskIds) this.launchTask(tx, taskId);
    }, { allowTerminated: true, kick: false });
  }

  /** Starts a queued command task whose creation is committed. */
  private launchTask(tx: Tx, taskId: string): void {
    const agentId = tx.cell.id;
    const task = tx.doc.tasks.find((t) => t.id === taskId);
    if (!task || task.status !== 'queued' || !task.cmd) return;
    // At the bound it stays queued: the next recorded result launches the agent's queued tasks.
    if (tx.doc.tasks.filter(isRunningCommand).length >= this.deps.maxRunningTasks) return;
    const handle = this.deps.processes.start(agentId, { ...task, cmd: task.cmd });
    void handle.result.then((result) => this.onTaskResult(agentId, taskId, result));
    const effect = findEffect(tx.doc, startCommandKey(taskId));
    if (effect) finishEffect(tx, effect, handle.pid === null ? 'failed' : 'done', { pid: handle.pid, host: hostname() });
    // No pid: the process never started (bad cwd ...); the task fails from Queued on its result.
    if (handle.pid === null) return;
    task.status = 'running';
    task.updated_at = tx.now.toISOString();
    tx.tellChild(taskId, { type: 'START' });
    tx.emit('task_status_changed', { task_id: taskId, status: 'running', pid: handle.pid });
  }

  /**
   * A command ended: its result is recorded by the agent's next result operation, which every
   * command that ends meanwhile shares (a burst of 100 short commands costs one commit, not 100).
   */
  private onTaskResult(agentId: string, taskId: string, result: CommandResult): void {
    const handle = this.deps.processes.take(taskId);
    if (!handle || this.deps.lease.isLost) return;
    this.results.add(agentId, { taskId, handle, result });
  }

  private async recordResults(agentId: string, take: () => FinishedCommand[]): Promise<void> {
    const waiting = await this.deps.cells.mutate(agentId, async (tx) => {
      for (const { taskId, handle, result } of take()) recordCommandResult(tx, taskId, result, handle.preview(2000));
      return tx.doc.tasks.filter((t) => t.status === 'queued' && t.cmd !== null).map((t) => t.id);
    }, { allowTerminated: true, pipelined: true });
    // Processes ended: queued tasks held back by maxRunningTasks may start now, oldest first.
    for (const taskId of waiting) this.launchAfterCommit(agentId, taskId);
  }
}
