import { AgentId } from './agent.js';

/**
 * A turn's run id names its agent: `<random id>.<agent id>` (e.g. `run_4f1c….support-bot`), so
 * any node of a cluster can route a worker's heartbeat or complete to the agent's holder without a
 * lookup (issue 19). The random part has no `.`; an agent id may, so the first `.` splits them.
 */
export function runIdFor(randomId: string, agentId: string): string {
  return `${randomId}.${agentId}`;
}

/** The agent a run id names, or `undefined` for an id that names none (ids of earlier versions: `run_<hex>`). */
export function agentOfRunId(runId: string): string | undefined {
  const dot = runId.indexOf('.');
  if (dot < 0) return undefined;
  const agentId = AgentId.safeParse(runId.slice(dot + 1));
  return agentId.success ? agentId.data : undefined;
}
