import { performance } from 'node:perf_hooks';
import { AgentCell } from '../src/runtime/agent/agent-cell.js';
import { openRuntime, scratchDir } from './lib/fixtures.js';

/**
 * Where an accepted prompt waits (issue 18's profile): 100 closed-loop callers prompt ONE agent
 * (or 100 agents, one each) for 3 s on the lowdb runtime; every lane operation is timed from
 * `AgentCell.run` to its start (the lane wait), its body, and its commit becoming durable,
 * split by pipelined inputs and the other (scheduler, turn) operations. `npx tsx bench/profile-lane.ts`
 */

interface Sample { wait: number; body: number; durable: number }
const samples = { input: [] as Sample[], other: [] as Sample[] };
const run = AgentCell.prototype.run;
AgentCell.prototype.run = function patched<T>(this: AgentCell, operation: Parameters<typeof run>[0], options: Parameters<typeof run>[1] = {}): Promise<T> {
  const t0 = performance.now();
  let t1 = 0;
  let t2 = 0;
  const timed = async (tx: Parameters<typeof operation>[0]) => {
    t1 = performance.now();
    try {
      return await operation(tx);
    } finally {
      t2 = performance.now();
    }
  };
  const done = run.call(this, timed, options) as Promise<T>;
  const record = () => {
    if (t1 === 0) return;
    (options.pipelined ? samples.input : samples.other).push({ wait: t1 - t0, body: t2 - t1, durable: performance.now() - t2 });
  };
  done.then(record, record);
  return done;
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0) : 0;
};
const show = (label: string, xs: Sample[]) => {
  const f = (k: keyof Sample) => `${k} p50 ${pct(xs.map((x) => x[k]), 50).toFixed(2)} p99 ${pct(xs.map((x) => x[k]), 99).toFixed(2)}`;
  console.log(`  ${label.padEnd(8)} n=${String(xs.length).padStart(6)}  ${f('wait')}  ${f('body')}  ${f('durable')} ms`);
};

async function scenario(agents: number): Promise<void> {
  const scratch = scratchDir('profile-ingress');
  const runtime = await openRuntime('lowdb', scratch.dir);
  try {
    const ids = Array.from({ length: agents }, (_, i) => `p-${i}`);
    for (const id of ids) await runtime.createAgent({ agent_id: id, mission: 'profile' });
    await new Promise((r) => setTimeout(r, 500));
    samples.input.length = 0;
    samples.other.length = 0;
    const accepted: number[] = [];
    let refused = 0;
    const end = performance.now() + 3_000;
    await Promise.all(Array.from({ length: 100 }, async (_, c) => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await runtime.prompt(ids[c % agents] as string, { text: 'hi' });
          accepted.push(performance.now() - t);
        } catch {
          refused += 1; // inbox_full: the caller backs off
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }));
    console.log(`${agents} agent(s), 100 callers, 3 s: ${(accepted.length / 3).toFixed(0)} accepted/s, acceptance p50 ${pct(accepted, 50).toFixed(1)} ms p99 ${pct(accepted, 99).toFixed(1)} ms, ${refused} refused (inbox_full)`);
    show('inputs', samples.input);
    show('other', samples.other);
  } finally {
    await runtime.close();
    scratch.remove();
  }
}

await scenario(1);
await scenario(100);
