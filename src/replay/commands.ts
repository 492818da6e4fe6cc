import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentEvent } from '../domain/index.js';
import { CommittedView } from '../store/lowdb/read-committed.js';
import { loadMachines } from './machines-module.js';
import { planAgent, type MigrationFinding } from './migration-plan.js';
import { replayTransitions, type ReplayReport } from './replay.js';

/**
 * `holon-xstate replay <agent-id>` and `holon-xstate migrate --dry-run`. Both read the data
 * directory's committed state (`CommittedView`: no lease, no lock, nothing written), so they run
 * beside a serving runtime as well as on a stopped one. Exit codes: 0 nothing found, 1 a
 * divergence or an agent that needs migrating, 2 a usage error.
 */
export const REPLAY_USAGE = 'replay <agent-id> [--data-dir <dir>] [--machines <module>] [--json]';
export const MIGRATE_DRY_RUN_USAGE = 'migrate --dry-run [--data-dir <dir>] [--agent <id>] [--machines <module>] [--json]';

/** Both commands, for the CLI's usage text. */
export const REPLAY_HELP = `replay: feeds the agent's recorded transitions through the pure machines (no effects performed)
  and reports the first one they do not reproduce (exit 1), or that none does (exit 0).
  --machines <module>  another version of the machines: a module exporting \`machines\` like
                       machines/index.ts, or \`agentMachine\` (the check before an upgrade)

migrate --dry-run: lists the agents whose persisted state the machines do not have, or whose
  recovery point would be refused, with what migrate would do for each (exit 1 when any); writes
  nothing. Both read the committed state without the lease, so they run beside a serving runtime.`;

const PAGE = 1_000;

async function allEvents(view: CommittedView, agentId: string, last: number): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for (let from = 1; from <= last; from += PAGE) out.push(...(await view.events(agentId, from, Math.min(last, from + PAGE - 1))));
  return out;
}

function describeReplay(report: ReplayReport, source: string): string {
  const head = `${report.agent_id}: ${report.transitions} transition(s) recorded, ${report.replayed} replayed through ${source}${report.unrecorded ? ` (${report.unrecorded} logged before machine events were: taken as recorded)` : ''}`;
  const d = report.divergence;
  if (!d) return `${head}\nno divergence: the machines reproduce every recorded transition`;
  return `${head}\nfirst divergence at transition #${d.seq} (event_seq ${d.event_seq}): ${d.reason}\n  recorded: ${d.recorded.from_state} --${d.event ?? '?'}--> ${d.recorded.to_state}\n  replayed: ${d.replayed.from_state} --${d.event ?? '?'}--> ${d.replayed.to_state ?? '(not taken)'}`;
}

export async function replayCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: { 'data-dir': { type: 'string', default: './data' }, machines: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const [agentId, ...extra] = positionals;
  if (!agentId || extra.length > 0) {
    console.error(`usage: holon-xstate ${REPLAY_USAGE}\n\n${REPLAY_HELP}`);
    return 2;
  }
  const machines = await loadMachines(values.machines);
  const view = await CommittedView.read(resolve(values['data-dir']));
  const stored = await view.agent(agentId);
  if (!stored) {
    console.error(`holon-xstate: agent ${agentId} not found in ${resolve(values['data-dir'])}`);
    return 2;
  }
  const report = replayTransitions(await allEvents(view, agentId, stored.last_event_seq), machines.agent, agentId);
  console.log(values.json ? JSON.stringify({ ...report, machines: machines.source }) : describeReplay(report, machines.source));
  return report.divergence ? 1 : 0;
}

export async function migrateDryRunCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: { 'dry-run': { type: 'boolean' }, 'data-dir': { type: 'string', default: './data' }, agent: { type: 'string' }, machines: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const machines = await loadMachines(values.machines);
  const view = await CommittedView.read(resolve(values['data-dir']));
  const ids = values.agent ? [values.agent] : view.agentIds();
  const findings: MigrationFinding[] = [];
  for (const id of ids) {
    const stored = await view.agent(id);
    if (!stored) {
      console.error(`holon-xstate: agent ${id} not found`);
      return 2;
    }
    const finding = planAgent(id, stored.doc, machines);
    if (finding) findings.push(finding);
  }
  if (values.json) {
    console.log(JSON.stringify({ machines: machines.source, checked: ids.length, findings }));
  } else {
    console.log(`checked ${ids.length} agent(s) against ${machines.source}: ${findings.length === 0 ? 'nothing to migrate' : `${findings.length} need attention`}`);
    for (const f of findings) console.log(`${f.agent_id}:\n${f.problems.map((p) => `  - ${p}`).join('\n')}\n${f.plan.map((p) => `  → ${p}`).join('\n')}`);
  }
  return findings.length > 0 ? 1 : 0;
}
