import { DomainError, type ExternalTriggerRecord, type TaskRecord, type TimerRecord, type WaitConditionRecord, type WorkItemRecord } from '../../domain/index.js';
import type { AgentDoc } from '../agent/agent-doc.js';

/** One record of the agent by id, or the `*_not_found` error a request for it answers with. */

export function findWorkItem(doc: AgentDoc, id: string): WorkItemRecord {
  const item = doc.work_items.find((w) => w.id === id);
  if (!item) throw new DomainError('work_item_not_found', `work item ${id} not found`, { work_item_id: id });
  return item;
}

export function findTask(doc: AgentDoc, taskId: string): TaskRecord {
  const task = doc.tasks.find((t) => t.id === taskId);
  if (!task) throw new DomainError('task_not_found', `task ${taskId} not found`, { task_id: taskId });
  return task;
}

export function findTimer(doc: AgentDoc, timerId: string): TimerRecord {
  const timer = doc.timers.find((t) => t.id === timerId);
  if (!timer) throw new DomainError('timer_not_found', `timer ${timerId} not found`);
  return timer;
}

export function findWait(doc: AgentDoc, waitId: string): WaitConditionRecord {
  const wait = doc.waits.find((w) => w.id === waitId);
  if (!wait) throw new DomainError('wait_not_found', `wait ${waitId} not found`);
  return wait;
}

export function findTriggerRecord(doc: AgentDoc, triggerId: string): ExternalTriggerRecord {
  const trigger = doc.triggers.find((t) => t.id === triggerId);
  if (!trigger) throw new DomainError('trigger_not_found', `trigger ${triggerId} not found`);
  return trigger;
}
