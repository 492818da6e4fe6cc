import type { AgentEvent } from '../../src/domain/index.js';
import type { RuntimeApi } from '../../src/runtime/api.js';

/**
 * Follows a runtime's committed events: finished turns, and which agents are awake. A benchmark
 * waits on it for the work its requests caused (turns, the sleep after them) to be done.
 */
export class Activity {
  turnsFinished = 0;
  /** Committed `wake_hint` events: one per wake hint the runtime accepted, whatever its disposition. */
  wakeHints = 0;
  /** Committed `message_queued` events of operator prompts: one per prompt the runtime accepted. */
  promptsQueued = 0;
  /**
   * Operator prompts whose turn finished: a turn takes several messages (issue 18), at its start
   * (`turn_started.message_ids`) and at its safe points (`turn_interjected`), so this, not
   * `turnsFinished`, is what a prompt benchmark waits for.
   */
  promptsProcessed = 0;
  /** Accepted prompts not yet in a finished turn. */
  private readonly openPrompts = new Set<string>();
  /** Prompts each running turn took, by run id. */
  private readonly runPrompts = new Map<string, number>();
  private readonly awake = new Set<string>();
  private readonly unsubscribe: () => void;
  private readonly turnStartListeners = new Map<string, (event: AgentEvent) => void>();

  constructor(runtime: RuntimeApi) {
    this.unsubscribe = runtime.subscribe(null, (event) => this.on(event));
  }

  private on(event: AgentEvent): void {
    if (event.type === 'turn_finished' && typeof event.payload['run_id'] === 'string' && event.payload['note'] === undefined) {
      this.turnsFinished += 1;
      this.promptsProcessed += this.runPrompts.get(event.payload['run_id']) ?? 0;
      this.runPrompts.delete(event.payload['run_id']);
    } else if (event.type === 'wake_hint') this.wakeHints += 1;
    else if (event.type === 'message_queued' && event.payload['kind'] === 'operator_prompt') {
      this.promptsQueued += 1;
      if (typeof event.payload['message_id'] === 'string') this.openPrompts.add(event.payload['message_id']);
    } else if (event.type === 'turn_started' || event.type === 'turn_interjected') {
      this.take(event);
      if (event.type === 'turn_started') this.turnStartListeners.get(event.agent_id)?.(event);
    }
    else if (event.type === 'transition_committed') {
      if (event.payload['to_phase'] === 'sleeping') this.awake.delete(event.agent_id);
      else this.awake.add(event.agent_id);
    }
  }

  /** Counts the accepted prompts a turn took (a turn_started of an earlier version names one, `message_id`). */
  private take(event: AgentEvent): void {
    const runId = event.payload['run_id'];
    if (typeof runId !== 'string') return;
    const ids = (event.payload['message_ids'] ?? [event.payload['message_id']]) as unknown[];
    let prompts = 0;
    for (const id of ids) if (typeof id === 'string' && this.openPrompts.delete(id)) prompts += 1;
    this.runPrompts.set(runId, (this.runPrompts.get(runId) ?? 0) + prompts);
  }

  /** Agents whose last committed transition left them outside `sleeping`. */
  get awakeCount(): number {
    return this.awake.size;
  }

  /** Calls `listener` on the next `turn_started` of `agentId` (one listener per agent). */
  onNextTurnStart(agentId: string, listener: (event: AgentEvent) => void): void {
    this.turnStartListeners.set(agentId, (event) => {
      this.turnStartListeners.delete(agentId);
      listener(event);
    });
  }

  close(): void {
    this.unsubscribe();
  }
}
