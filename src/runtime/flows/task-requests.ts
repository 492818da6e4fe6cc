import { DomainError, ExecCommandRequest, InvokeAgentRequest, type TaskRecord } from '../../domain/index.js';
import { recordAnswer, recordedAnswer } from '../agent/idempotency-ledger.js';
import type { Tx } from '../agent/tx.js';
import type { IdempotencyReceipt, MutationOptions } from '../api.js';
import type { AgentCells } from '../host/cells.js';
import type { CommandProcesses } from '../host/processes.js';
import { findWorkItem } from '../records/lookups.js';
import { createCommandTask, createInvocationTask } from '../records/tasks.js';
import { SharedOperations } from '../shared-operations.js';
import type { AgentCreation } from './create-agent.js';
import { refuseStopped, type Ingress } from './ingress.js';
import type { Lifecycle } from './lifecycle.js';
import type { TaskProcesses } from './task-processes.js';

/** An ExecCommand request waiting for the operation it joined. */
interface CommandRequest {
  req: ExecCommandRequest;
  resolve: (task: TaskRecord) => void;
  reject: (error: unknown) => void;
  idempotency?: IdempotencyReceipt;
}

export interface TaskRequestsDeps {
  cells: Pick<AgentCells, 'mutate' | 'cell'>;
  lifecycle: Pick<Lifecycle, 'drain'>;
  processes: Pick<CommandProcesses, 'setEnv'>;
  taskProcesses: Pick<TaskProcesses, 'launchAfterCommit'>;
  creation: Pick<AgentCreation, 'create'>;
  ingress: Pick<Ingress, 'queueMessage'>;
}

/** The requests that start a task: ExecCommand (a command process) and InvokeAgent (a child agent's turn). */
export class TaskRequests {
  /** ExecCommand requests to one agent arriving together share one operation. */
  private readonly commandRequests = new SharedOperations<CommandRequest>((agentId, take) => this.recordCommands(agentId, take));

  constructor(private readonly deps: TaskRequestsDeps) {}

  async execCommand(agentId: string, request: ExecCommandRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    const req = ExecCommandRequest.parse(request);
    return new Promise((resolve, reject) => this.commandRequests.join(agentId, { req, resolve, reject, ...(options.idempotency ? { idempotency: options.idempotency } : {}) }));
  }

  /** InvokeAgent: an ActorInvocation task backed by a child agent whose turn result re-enters the parent. */
  async invokeAgent(agentId: string, request: InvokeAgentRequest, options: MutationOptions = {}): Promise<TaskRecord> {
    const req = InvokeAgentRequest.parse(request);
    const parent = await this.deps.cells.cell(agentId);
    if (req.target_agent_id === agentId) throw new DomainError('forbidden', 'an agent cannot invoke itself');
    if (parent.doc.state.status === 'stopped') throw new DomainError('agent_stopped', `agent ${agentId} is stopped`);
    let childId = req.target_agent_id;
    if (childId) await this.deps.cells.cell(childId);
    else {
      // A retried invocation finds the child its first attempt created (the key names it).
      const childKey = options.idempotency ? { idempotency_key: `invoke:${agentId}:${options.idempotency.key}` } : {};
      childId = (await this.deps.creation.create({ mission: req.summary, owner: agentId, config: { turn_runner: parent.doc.config.turn_runner, model: parent.doc.config.model } }, childKey)).agent.identity.agent_id;
    }
    const child = childId;
    const task = await this.deps.cells.mutate(agentId, async (tx) => {
      refuseStopped(tx);
      await this.activeForTask(tx);
      return createInvocationTask(tx, req.summary, child);
    }, options);
    await this.deps.ingress.queueMessage(child, {
      kind: 'internal_followup',
      origin: { kind: 'system', subsystem: 'invoke_agent' },
      authority_class: 'runtime_instruction',
      priority: 'next',
      body: { type: 'text', text: req.prompt },
      metadata: { invoked_by: { agent_id: agentId, task_id: task.id } },
    }, { idempotency: { key: `invoked_by:${task.id}`, fingerprint: `task:${task.id}` } });
    // Also on a retry: a first attempt that died before this point still gives the child its prompt, once.
    return task;
  }

  /**
   * Records the ExecCommand requests that joined one operation. A request the agent refuses
   * (stopped, unknown work item) fails alone, before anything changes; a retried one (its
   * Idempotency-Key recorded) gets its task as recorded; the others share the wake, the commit,
   * and the launch that follows it.
   */
  private recordCommands(agentId: string, take: () => CommandRequest[]): void {
    let taken: CommandRequest[] | null = null;
    void this.deps.cells.mutate(agentId, async (tx) => {
      taken = take();
      const answers: Array<{ request: CommandRequest; task: TaskRecord; created: boolean }> = [];
      const fresh = taken.filter((request) => {
        try {
          const recorded = request.idempotency ? recordedAnswer(tx.doc, request.idempotency) : undefined;
          if (recorded && request.idempotency) {
            request.idempotency.replayed = true;
            answers.push({ request, task: recorded.value as TaskRecord, created: false });
            return false;
          }
          refuseStopped(tx);
          if (request.req.work_item_id) findWorkItem(tx.doc, request.req.work_item_id);
          return true;
        } catch (error) {
          request.reject(error);
          return false;
        }
      });
      if (fresh.length === 0) return answers;
      await this.activeForTask(tx);
      for (const request of fresh) {
        const { req } = request;
        const task = createCommandTask(tx, { summary: req.summary, cmd: req.cmd, accepts_input: req.accepts_input, ...(req.workdir ? { workdir: req.workdir } : {}), ...(req.timeout_ms ? { timeout_ms: req.timeout_ms } : {}), ...(req.work_item_id ? { work_item_id: req.work_item_id } : {}) }, null);
        if (req.env) this.deps.processes.setEnv(task.id, req.env);
        if (request.idempotency) recordAnswer(tx.doc, request.idempotency, task, tx.now);
        answers.push({ request, task, created: true });
      }
      return answers;
    }, { pipelined: true }).then(
      (answers) => {
        for (const { request, task, created } of answers) {
          request.resolve(task);
          if (created) this.deps.taskProcesses.launchAfterCommit(agentId, task.id);
        }
      },
      (error: unknown) => {
        // Failed before it started (an unknown agent) or as a whole: every request it took fails.
        for (const request of taken ?? take()) request.reject(error);
      },
    );
  }

  /** Tasks need a live agent: a sleeping one is woken (seed 002 wake protocol) in the same operation. */
  private async activeForTask(tx: Tx): Promise<void> {
    if (tx.doc.state.phase === 'sleeping') {
      tx.send({ type: 'WAKE', reason: 'task requested' }, { reason: 'task requested while asleep', trigger: 'user' });
      await this.deps.lifecycle.drain(tx);
    }
    if (tx.doc.state.phase !== 'active') throw new DomainError('illegal_transition', `agent ${tx.cell.id} is ${tx.doc.state.phase}: tasks start only while active`);
  }
}
