import type { EventObject } from 'xstate';
import type { AgentEffect, AgentEvent, ContinuationEvent, TaskEvent } from '../../../machines/index.js';
import type { Step } from './machines.js';
import { cloneDoc, factsOf, liveTask, phaseOf, type Doc, type Model } from './model.js';

const TRANSITIONAL = new Set(['initializing', 'waking', 'recovering', 'terminating', 'evolving']);

/**
 * One operation's working copy of an agent document, as `Tx` is in the runtime: events go to the
 * real machines through it, every state change is recorded as a transition (the reason chain),
 * and the effects the agent machine requests queue up for the operation to perform.
 */
export class Draft {
  readonly doc: Doc;
  /** (from_state, to_state) of every transition, in order: the commit's `transition_committed` events. */
  readonly records: Array<[string, string]> = [];
  /** `effect.requested` emitted and not performed yet. */
  readonly effects: AgentEffect[] = [];
  /** Some machine took an event: the actor is needed (ensureActor), and the draft changed. */
  touchedActor = false;
  dirty = false;

  constructor(
    private readonly model: Model,
    doc: Doc,
  ) {
    this.doc = cloneDoc(doc);
  }

  get phase(): string {
    return phaseOf(this.model, this.doc);
  }

  get path(): string {
    return this.model.machines.agent.path(this.doc.a);
  }

  /** `tx.send`: returns whether the agent moved to another state. */
  send(event: AgentEvent, record = true): boolean {
    const step: Step = this.model.machines.agent.step(this.doc.a, event as EventObject);
    this.touchedActor = true;
    if (!step.taken) return false;
    const from = this.path;
    const fromPhase = this.phase;
    this.doc.a = step.id;
    this.dirty = true;
    this.effects.push(...step.effects);
    if (!step.moved) return false;
    if (record) this.records.push([from, this.path]);
    // Entering a transitional phase opens the protocol (from the phase before); leaving it closes it.
    if (TRANSITIONAL.has(this.phase)) this.doc.pendFrom = fromPhase;
    else this.doc.pendFrom = null;
    return true;
  }

  /** `taskEvent`: the event goes to the task's child actor; a terminal task tells its parent. */
  task(slot: number, event: TaskEvent): void {
    const task = this.doc.t[slot];
    if (!task || task.m < 0) return;
    const step = this.model.machines.task.step(task.m, event as EventObject);
    this.touchedActor = true;
    if (!step.taken) return;
    const wasLive = liveTask(this.model, task);
    task.m = step.id;
    this.dirty = true;
    if (wasLive && !liveTask(this.model, task)) {
      const status = this.model.machines.task.path(task.m) as 'completed';
      this.send({ type: 'task.finished', taskId: `task-${slot + 1}`, status, exitCode: status === 'completed' ? 0 : null, reason: null });
    }
  }

  continuation(event: ContinuationEvent): void {
    const step = this.model.machines.continuation.step(this.doc.c, event as EventObject);
    this.touchedActor = true;
    if (!step.taken) return;
    this.doc.c = step.id;
    this.dirty = true;
  }

  /** A record change outside the machines (queue, snapshots, triggers ...). */
  touch(): void {
    this.dirty = true;
  }

  facts() {
    return factsOf(this.model, this.doc);
  }

  takeEffects(): AgentEffect[] {
    return this.effects.splice(0, this.effects.length);
  }
}
