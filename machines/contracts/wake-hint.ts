import type { AgentStatus, WakeDisposition } from '../../src/domain/index.js';

/**
 * Seed 003 / holon-reference §7.2. A stopped agent ignores hints. A running (or legacy awaiting_task) agent,
 * or an idle one with queued input, stores the hint for later: the next idle tick will see it. Only an idle
 * agent with an empty queue is triggered at once.
 */
export function wakeHintDisposition(input: { status: AgentStatus; queue_depth: number }): WakeDisposition {
  if (input.status === 'stopped') return 'ignored';
  if (input.status === 'awake_running' || input.status === 'awaiting_task') return 'coalesced';
  return input.queue_depth > 0 ? 'coalesced' : 'triggered';
}
