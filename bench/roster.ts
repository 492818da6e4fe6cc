import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LowdbStore } from '../src/store/index.js';
import { scratchDir } from './lib/fixtures.js';
import { progress, runBenchmark } from './lib/harness.js';
import { pairwiseRatios } from './lib/stats.js';

/**
 * The store's share of a restart: `open()` + `listRoster()` of a fresh `LowdbStore` over a data
 * directory of `ROSTER_AGENTS` (default 20,000) agents, each with a ~6 KB document and a roster
 * entry. Baseline in the same run: reading and parsing every doc.json, which is what listing
 * the agents cost before the roster index. Also after a crash: the writer is abandoned (as if
 * killed) with `CRASH_COMMITS` commits in its write-ahead log, which the next open replays.
 * Usage: `npx tsx bench/roster.ts`.
 */

const AGENTS = Number(process.env['ROSTER_AGENTS'] ?? 20_000);
const RUNS = 5;
const BATCH = 1000;
const CRASH_COMMITS = 2000;
const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'lib', 'roster-child.ts');

interface ChildReport {
  seconds: number;
  agents: number;
  rss_mib: number;
  rss_growth_mib: number;
}

/** open() + listRoster() in a fresh process: the store's share of a restart, time and memory. */
function restartInChild(dataDir: string): ChildReport {
  const out = execFileSync(process.execPath, ['--import', 'tsx', CHILD, dataDir], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as ChildReport;
}

function doc(i: number): Record<string, unknown> {
  return { i, snapshots: 'p'.repeat(6000) };
}

async function readEveryDoc(dataDir: string, ids: string[]): Promise<number> {
  const started = performance.now();
  let versions = 0;
  for (const id of ids) {
    const parsed = JSON.parse(await readFile(join(dataDir, 'agents', id, 'doc.json'), 'utf8')) as { version: number };
    versions += parsed.version;
  }
  if (versions < ids.length) throw new Error('a doc.json lost its version');
  return (performance.now() - started) / 1000;
}

runBenchmark('roster', 10 * 60_000, async () => {
  const scratch = scratchDir('roster');
  const dataDir = join(scratch.dir, 'data');
  const ids = Array.from({ length: AGENTS }, (_, i) => `agent-${String(i).padStart(6, '0')}`);
  const restart: number[] = [];
  const scan: number[] = [];
  const rss: number[] = [];
  const childSeconds: number[] = [];
  const childGrowth: number[] = [];
  const crashRestart: number[] = [];
  let walMiB = 0;
  try {
    const writer = new LowdbStore({ dataDir });
    await writer.open();
    const lease = await writer.acquireLease(`bench-${process.pid}`, 600_000, new Date());
    const created = performance.now();
    for (let start = 0; start < ids.length; start += BATCH) {
      await Promise.all(
        ids.slice(start, start + BATCH).map((agent_id, k) =>
          writer.commit({
            agent_id,
            expected_version: null,
            doc: doc(start + k),
            events: [{ type: 'message_queued', payload: { k }, ts: new Date().toISOString() }],
            fencing_token: lease.fencing_token,
            roster: { phase: 'sleeping', status: 'running', trigger_hashes: [`h${start + k}`], next_timer_due: null },
          }),
        ),
      );
    }
    progress(`${AGENTS} agents created in ${((performance.now() - created) / 1000).toFixed(1)} s`);
    await writer.checkpoint();
    await Promise.all(
      ids.slice(0, CRASH_COMMITS).map((agent_id, k) =>
        writer.commit({
          agent_id,
          expected_version: 1,
          doc: doc(k + 1),
          events: [{ type: 'message_queued', payload: { k }, ts: new Date().toISOString() }],
          fencing_token: lease.fencing_token,
          roster: { phase: 'active', status: 'running', trigger_hashes: [`h${k}`], next_timer_due: null },
        }),
      ),
    );
    const wal = await readdir(join(dataDir, 'wal'));
    for (const name of wal) walMiB += (await stat(join(dataDir, 'wal', name))).size / 2 ** 20;
    // The writer is abandoned, not closed: its log is not checkpointed, as after a SIGKILL.
    for (let run = 0; run < RUNS; run += 1) {
      await rm(join(dataDir, 'writer.lock'), { force: true });
      const started = performance.now();
      const store = new LowdbStore({ dataDir });
      await store.open();
      const roster = await store.listRoster();
      crashRestart.push((performance.now() - started) / 1000);
      if (roster.filter((e) => e.version === 2).length !== CRASH_COMMITS) throw new Error('a logged commit was not replayed');
      progress(`crash run ${run + 1}/${RUNS}: open (replaying ${walMiB.toFixed(1)} MiB of log) + listRoster ${crashRestart.at(-1)?.toFixed(3)} s`);
    }
    await rm(join(dataDir, 'writer.lock'), { force: true });
    const cleaner = new LowdbStore({ dataDir });
    await cleaner.open();
    await cleaner.close();

    for (let run = 0; run < RUNS; run += 1) {
      scan.push(await readEveryDoc(dataDir, ids));
      const started = performance.now();
      const store = new LowdbStore({ dataDir });
      await store.open();
      const roster = await store.listRoster();
      restart.push((performance.now() - started) / 1000);
      rss.push(process.memoryUsage().rss / 2 ** 20);
      if (roster.length !== AGENTS) throw new Error(`listed ${roster.length} of ${AGENTS} agents`);
      await store.close();
      const child = restartInChild(dataDir);
      if (child.agents !== AGENTS) throw new Error(`the fresh process listed ${child.agents} agents`);
      childSeconds.push(child.seconds);
      childGrowth.push(child.rss_growth_mib);
      progress(`run ${run + 1}/${RUNS}: open + listRoster ${restart.at(-1)?.toFixed(3)} s (fresh process ${child.seconds.toFixed(3)} s, RSS +${child.rss_growth_mib.toFixed(0)} MiB), reading every doc.json ${scan.at(-1)?.toFixed(2)} s`);
    }
  } finally {
    scratch.remove();
  }
  return {
    metrics: [
      { name: `baseline: read + parse every doc.json (${AGENTS})`, unit: 's', samples: scan },
      { name: `open() + listRoster(), ${AGENTS} agents`, unit: 's', samples: restart },
      { name: 'per agent', unit: 'µs', samples: restart.map((s) => (s / AGENTS) * 1e6) },
      { name: 'projected to 100,000 agents', unit: 's', samples: restart.map((s) => (s / AGENTS) * 100_000) },
      { name: 'ratio open + listRoster / reading every doc.json', unit: '×', samples: pairwiseRatios(restart, scan) },
      { name: 'process RSS after listRoster (this process also created the agents)', unit: 'MiB', samples: rss },
      { name: 'fresh process: open() + listRoster()', unit: 's', samples: childSeconds },
      { name: 'fresh process: RSS growth over open() + listRoster()', unit: 'MiB', samples: childGrowth },
      { name: `after a crash: open() + listRoster(), replaying ${CRASH_COMMITS} commits (${walMiB.toFixed(1)} MiB of log)`, unit: 's', samples: crashRestart },
    ],
    notes: [
      `${AGENTS} agents with a ~6 KB document and a ~90 B roster entry; a fresh LowdbStore per run, after a clean close (no log to replay)`,
      'after a crash: the first run repairs the files from the log, later runs find them repaired (the log is only checkpointed by a close)',
    ],
  };
});
