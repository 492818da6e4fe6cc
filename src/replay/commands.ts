import { resolve } from 'node:path';
import type { CommandSpec, ParsedOptions } from '../cli/options.js';
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
/** `holon-xstate replay`: the command table entry (src/cli.ts adds the shared --data-dir). */
export const REPLAY_COMMAND: CommandSpec = {
  name: 'replay',
  summary: "replay an agent's recorded transitions through the machines",
  description:
    "Feeds the agent's recorded transitions through the pure machines (no effects are performed) and reports the first " +
    'one they do not reproduce (exit 1), or that none does (exit 0). With --machines, another version of the machines: ' +
    'the check before an upgrade. Reads the committed state without the lease, so it runs beside a serving runtime.',
  argument: { name: '<agent-id>', description: 'the agent to replay' },
  options: {
    machines: { type: 'string', value: '<module>', defaultText: "this build's", description: 'a module exporting `machines` like machines/index.ts, or `agentMachine` (.ts under tsx, .js otherwise)' },
    json: { type: 'boolean', description: 'print the report as one JSON object' },
  },
};

/** The options `migrate` takes for its dry run. */
export const MIGRATE_DRY_RUN_OPTIONS: CommandSpec['options'] = {
  'dry-run': {
    type: 'boolean',
    description: 'write nothing: list the agents whose persisted state the machines do not have, or whose recovery point would be refused, with what migrate would do for each (exit 1 when any)',
  },
  machines: { type: 'string', value: '<module>', defaultText: "this build's", description: 'with --dry-run: check against another version of the machines' },
  json: { type: 'boolean', description: 'with --dry-run: print the plan as one JSON object' },
};

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

/** Runs `replay`; its exit code says whether the machines diverged (1) or not (0); 2 for an unknown agent. */
export async function runReplay(options: ParsedOptions): Promise<void> {
  process.exitCode = await replay(options.argument ?? '', resolve(options.string('data-dir') ?? './data'), options.string('machines'), options.flag('json'));
}

async function replay(agentId: string, dataDir: string, machinesPath: string | undefined, json: boolean): Promise<number> {
  const machines = await loadMachines(machinesPath);
  const view = await CommittedView.read(dataDir);
  const stored = await view.agent(agentId);
  if (!stored) {
    console.error(`holon-xstate: agent ${agentId} not found in ${dataDir}`);
    return 2;
  }
  const report = replayTransitions(await allEvents(view, agentId, stored.last_event_seq), machines.agent, agentId);
  console.log(json ? JSON.stringify({ ...report, machines: machines.source }) : describeReplay(report, machines.source));
  return report.divergence ? 1 : 0;
}

/** Runs `migrate --dry-run`: exit 1 when an agent needs attention, 2 for an unknown agent. */
export async function runMigrateDryRun(options: ParsedOptions): Promise<void> {
  process.exitCode = await migrateDryRun(resolve(options.string('data-dir') ?? './data'), options.string('agent'), options.string('machines'), options.flag('json'));
}

async function migrateDryRun(dataDir: string, agent: string | undefined, machinesPath: string | undefined, json: boolean): Promise<number> {
  const machines = await loadMachines(machinesPath);
  const view = await CommittedView.read(dataDir);
  const ids = agent ? [agent] : view.agentIds();
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
  if (json) {
    console.log(JSON.stringify({ machines: machines.source, checked: ids.length, findings }));
  } else {
    console.log(`checked ${ids.length} agent(s) against ${machines.source}: ${findings.length === 0 ? 'nothing to migrate' : `${findings.length} need attention`}`);
    for (const f of findings) console.log(`${f.agent_id}:\n${f.problems.map((p) => `  - ${p}`).join('\n')}\n${f.plan.map((p) => `  → ${p}`).join('\n')}`);
  }
  return findings.length > 0 ? 1 : 0;
}
