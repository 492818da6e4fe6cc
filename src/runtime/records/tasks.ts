import { isTerminalTask } from '../../../machines/contracts/index.js';
import type { TaskRecord } from '../../domain/index.js';
import { appendRecord } from '../agent/agent-doc.js';
import { factsOf } from '../agent/facts.js';
import { admitMessage } from '../agent/messages.js';
import type { Tx } from '../agent/tx.js';
import { newId } from '../clock.js';
import type { CommandResult } from '../process/index.js';
import { startCommandKey, startEffect } from './effects-ledger.js';
import { taskEnded } from './waits.js';

/** A command an agent asked for (ExecCommand, or a turn's exec_command directive). */
export interface CommandSpec {
  summary: string;
  cmd: string;
  workdir?: string;
  accepts_input: boolean;
  timeout_ms?: number;
  work_item_id?: string;
}

/** How a task's record ends. */
export interface TaskEnd {
  status: TaskRecord['status'];
  exit_code: number | null;
  reason: string | null;
}

/** Every new task record: the defaults, then what its kind sets; its actor is spawned in the same operation. */
function addTask(tx: Tx, fields: Pick<TaskRecord, 'kind' | 'status' | 'summary' | 'parent_run_id'> & Partial<TaskRecord>, reason: string): TaskRecord {
  const now = tx.now.toISOString();
  const task: TaskRecord = {
    id: newId('task'),
    agent_id: tx.cell.id,
    created_at: now,
    updated_at: now,
    work_item_id: null,
    accepts_input: false,
    cmd: null,
    workdir: null,
    timeout_ms: null,
    exit_code: null,
    reason: null,
    child_agent_id: null,
    output_bytes: 0,
    result_text: null,
    ...fields,
  };
  appendRecord(tx.doc, 'tasks', task);
  tx.send({ type: 'TASK.SPAWN', taskId: task.id, kind: task.kind, acceptsInput: task.accepts_input }, { reason, trigger: 'agent' });
  return task;
}

/** A queued command task; its start is in the effects ledger before it runs, so a crash in between leaves it in doubt, never re-run. */
export function createCommandTask(tx: Tx, spec: CommandSpec, runId: string | null): TaskRecord {
  const task = addTask(tx, {
    kind: 'command_task',
    status: 'queued',
    summary: spec.summary,
    parent_run_id: runId,
    accepts_input: spec.accepts_input,
    cmd: spec.cmd,
    workdir: spec.workdir ?? null,
    timeout_ms: spec.timeout_ms ?? null,
    work_item_id: spec.work_item_id ?? null,
  }, 'task spawned');
  startEffect(tx, startCommandKey(task.id), 'start_command', { task_id: task.id });
  tx.emit('task_status_changed', { task_id: task.id, status: 'queued', kind: task.kind, summary: task.summary });
  return task;
}

/** A running actor invocation: a child agent's turn whose result ends the task. */
export function createInvocationTask(tx: Tx, summary: string, childId: string): TaskRecord {
  const task = addTask(tx, { kind: 'actor_invocation', status: 'running', summary, parent_run_id: tx.doc.state.current_run_id, child_agent_id: childId }, 'invocation spawned');
  tx.tellChild(task.id, { type: 'START' });
  tx.emit('task_status_changed', { task_id: task.id, status: 'running', kind: task.kind, child_agent_id: childId });
  return task;
}

/** A task's terminal record, its result message and the exact wait it satisfies, in one commit. */
export function finishTaskRecord(tx: Tx, task: TaskRecord, end: TaskEnd, options: { enqueueResult?: boolean } = {}): void {
  const enqueueResult = options.enqueueResult ?? true;
  task.status = end.status;
  task.exit_code = end.exit_code;
  task.reason = end.reason;
  task.updated_at = tx.now.toISOString();
  if (end.status === 'interrupted') tx.tellChild(task.id, { type: 'INTERRUPT', reason: end.reason ?? 'interrupted' });
  tx.emit('task_status_changed', { task_id: task.id, status: task.status, exit_code: task.exit_code, reason: task.reason });
  if (enqueueResult) {
    admitMessage(
      tx.doc,
      {
        kind: 'task_result',
        origin: { kind: 'task', task_id: task.id },
        authority_class: 'runtime_instruction',
        priority: 'next',
        body: { type: 'json', value: { task_id: task.id, status: task.status, exit_code: task.exit_code, reason: task.reason, output_preview: task.result_text ?? '' } },
        task_id: task.id,
        work_item_id: task.work_item_id,
        idempotency_key: `task_result:${task.id}`,
      },
      tx.now,
    );
    tx.emit('message_queued', { kind: 'task_result', task_id: task.id });
  }
  taskEnded(tx, task.id, enqueueResult);
  tx.send({ type: 'TASK.SETTLED', facts: factsOf(tx.doc) }, { reason: `task ${task.id} ${task.status}`, trigger: 'system' });
}

/** A command's process ended: its task actor hears how, and its record ends with the result. */
export function recordCommandResult(tx: Tx, taskId: string, result: CommandResult, preview: string): void {
  const task = tx.doc.tasks.find((t) => t.id === taskId);
  if (!task || isTerminalTask(task.status)) return;
  task.output_bytes = result.output_bytes;
  const status = result.outcome === 'completed' ? 'completed' : result.outcome === 'cancelled' ? 'cancelled' : 'failed';
  if (result.reason === 'spawn_failed') tx.tellChild(taskId, { type: 'SPAWN_FAILED', reason: 'spawn_failed' });
  else if (result.reason === 'timeout') tx.tellChild(taskId, { type: 'TIMED_OUT' });
  else tx.tellChild(taskId, { type: 'EXITED', exitCode: result.exit_code ?? -1 });
  task.result_text = preview;
  finishTaskRecord(tx, task, { status, exit_code: result.exit_code, reason: result.reason });
}

/** A command task whose process runs (or is being stopped): what `maxRunningTasks` bounds. */
export function isRunningCommand(task: TaskRecord): boolean {
  return task.cmd !== null && (task.status === 'running' || task.status === 'cancelling');
}
