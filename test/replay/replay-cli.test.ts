import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransitionRecord, type AgentEvent } from '../../src/domain/index.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { CommittedView } from '../../src/store/lowdb/read-committed.js';
import { editLatestSnapshot } from '../durability/fixtures/snapshot-edit.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DORMANT = 'test/replay/fixtures/machines-dormant.ts';
const NO_WAKE = 'test/replay/fixtures/machines-no-wake.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A real `holon-xstate` process. */
function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const asleep = (runtime: Runtime, id: string) => until(async () => ((await runtime.getSummary(id)).agent.status === 'asleep' ? true : undefined));

/** The recorded transitions of an agent, read independently of the command under test. */
async function recorded(dataDir: string, id: string): Promise<TransitionRecord[]> {
  const view = await CommittedView.read(dataDir);
  const stored = await view.agent(id);
  const events: AgentEvent[] = await view.events(id, 1, stored?.last_event_seq ?? 0);
  return events.filter((e) => e.type === 'transition_committed').map((e) => TransitionRecord.parse(e.payload));
}

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'holon-replay-'));
  const runtime = await Runtime.open({ dataDir, nodeId: 'writer' });
  try {
    // `lived`: created, asleep, woken by a prompt that runs a command and waits for it, asleep
    // again, stopped asleep and started back asleep.
    await runtime.createAgent({ agent_id: 'lived' });
    await asleep(runtime, 'lived');
    await runtime.prompt('lived', { text: '/exec-wait echo replayed' });
    await until(async () => ((await runtime.getSummary('lived')).agent.turn_index >= 2 ? true : undefined));
    await asleep(runtime, 'lived');
    await runtime.control('lived', { action: 'stop' });
    await runtime.control('lived', { action: 'start' });
    await asleep(runtime, 'lived');
    // `legacy`: asleep; its recovery point is rewritten below as another schema version wrote it.
    await runtime.createAgent({ agent_id: 'legacy' });
    await asleep(runtime, 'legacy');
  } finally {
    await runtime.close();
  }
  await editLatestSnapshot(dataDir, 'legacy', (snapshot) => (snapshot.recovery.schema_version = 7), { resign: true });
}, 60_000);

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('holon-xstate replay <agent-id>', () => {
  it('replays every recorded transition through the machines and finds no divergence', async () => {
    const transitions = await recorded(dataDir, 'lived');
    expect(transitions.length).toBeGreaterThan(10);
    const run = await cli('replay', 'lived', '--data-dir', dataDir);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`lived: ${transitions.length} transition(s) recorded, ${transitions.length} replayed through machines/index.ts (this build)`);
    expect(run.stdout).toContain('no divergence');
  }, 60_000);

  it('--machines with sleeping renamed: the first divergence is the first record that went to sleep', async () => {
    const transitions = await recorded(dataDir, 'lived');
    const firstSleep = transitions.find((t) => t.to_state === 'sleeping') as TransitionRecord;
    const run = await cli('replay', 'lived', '--data-dir', dataDir, '--machines', DORMANT, '--json');
    expect(run.code, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout) as { divergence: { seq: number; event: string; recorded: { to_state: string }; replayed: { to_state: string } }; replayed: number };
    expect(report.divergence).toMatchObject({ seq: firstSleep.seq, event: 'IDLE', recorded: { from_state: 'active.awakeIdle', to_state: 'sleeping' }, replayed: { from_state: 'active.awakeIdle', to_state: 'dormant' } });
    expect(report.replayed).toBe(firstSleep.seq);
  }, 60_000);

  it('--machines whose sleeping agent takes no WAKE: the wake is not taken, named with both sides', async () => {
    const run = await cli('replay', 'lived', '--data-dir', dataDir, '--machines', NO_WAKE);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/first divergence at transition #\d+ \(event_seq \d+\): WAKE is not taken in sleeping/);
    expect(run.stdout).toContain('recorded: sleeping --WAKE--> waking');
    expect(run.stdout).toContain('replayed: sleeping --WAKE--> (not taken)');
  }, 60_000);

  it('runs beside a serving runtime (it takes no lease and writes nothing), and names an unknown agent', async () => {
    const runtime = await Runtime.open({ dataDir, nodeId: 'server' });
    try {
      const before = (await runtime.listTransitions('lived', { limit: 512 })).length;
      const run = await cli('replay', 'lived', '--data-dir', dataDir);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`${before} replayed`);
      const unknown = await cli('replay', 'nobody', '--data-dir', dataDir);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('agent nobody not found');
      // The runtime still holds its lease and writes: a turn, and back to sleep (later tests read that state).
      const turns = (await runtime.getSummary('lived')).agent.turn_index;
      await runtime.prompt('lived', { text: 'still mine' });
      await until(async () => ((await runtime.getSummary('lived')).agent.turn_index > turns ? true : undefined));
      await asleep(runtime, 'lived');
    } finally {
      await runtime.close();
    }
  }, 60_000);
});

describe('holon-xstate replay: its command line', () => {
  it('--help names the argument and the options; a missing agent id is a usage error (exit 2)', async () => {
    const help = await cli('replay', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout.split('\n')[0]).toBe('usage: holon-xstate replay <agent-id> [options]');
    expect(help.stdout).toContain('arguments:\n  <agent-id>');
    expect(help.stdout).toMatch(/--machines <module> +a module exporting `machines`/);
    const missing = await cli('replay', '--data-dir', dataDir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("holon-xstate: 'replay' needs <agent-id>");
    const two = await cli('replay', 'lived', 'legacy', '--data-dir', dataDir);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain("unexpected argument 'legacy': 'replay' takes one <agent-id>");
  }, 60_000);
});

describe('holon-xstate migrate --dry-run', () => {
  it('with other machines: lists the agents whose persisted state they do not have, and changes nothing', async () => {
    const before = await readFile(join(dataDir, 'agents', 'lived', 'doc.json'), 'utf8');
    const run = await cli('migrate', '--dry-run', '--data-dir', dataDir, '--machines', DORMANT);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('checked 2 agent(s)');
    expect(run.stdout).toContain('lived:\n  - its persisted state sleeping is not a state of the agent machine');
    expect(run.stdout).toContain('→ migrate does not change machine state');
    expect(await readFile(join(dataDir, 'agents', 'lived', 'doc.json'), 'utf8')).toBe(before);
  }, 60_000);

  it('lists the agent whose recovery point would be refused, says what migrate would do, and migrate does it', async () => {
    const dry = await cli('migrate', '--dry-run', '--data-dir', dataDir, '--json');
    expect(dry.code).toBe(1);
    const plan = JSON.parse(dry.stdout) as { checked: number; findings: Array<{ agent_id: string; problems: string[]; plan: string[] }> };
    expect(plan.checked).toBe(2);
    expect(plan.findings).toEqual([
      {
        agent_id: 'legacy',
        problems: ['its latest recovery point has schema_version 7, not 1: a wake is refused (it stays asleep)'],
        plan: ['migrate would rewrite 1 snapshot(s) at schema_version 1 and leave 0 corrupted one(s) for recovery'],
      },
    ]);
    const migrated = await cli('migrate', '--data-dir', dataDir, '--agent', 'legacy');
    expect(migrated.stdout).toContain('legacy: 1 snapshot(s) migrated, 0 corrupted left for recovery');
    const after = await cli('migrate', '--dry-run', '--data-dir', dataDir);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('checked 2 agent(s) against machines/index.ts (this build): nothing to migrate');
  }, 90_000);
});
