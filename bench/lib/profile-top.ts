import { readFileSync } from 'node:fs';

/**
 * Reads a `.cpuprofile` (from `node --cpu-prof`) and prints the functions with the most self
 * time and the most inclusive time, as shares of the sampled time.
 *
 *   node --cpu-prof --cpu-prof-dir=prof --import tsx bench/events.ts
 *   npx tsx bench/lib/profile-top.ts prof/CPU.*.cpuprofile [rows] [filter]
 *
 * `filter` keeps only inclusive rows whose name contains it (e.g. `src/`). Under tsx the line
 * numbers are those of tsx's output; for exact lines profile a `tsc` build
 * (`npx tsc -p tsconfig.json --outDir bench/results/dist --noEmit false`, then run the `.js`).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function label(frame: CallFrame): string {
  const file = frame.url.replace(/^file:\/\/\/.*?\/(src|machines|bench|node_modules)\//, '$1/').replace(/^.*node_modules\//, 'node_modules/');
  const line = frame.url && frame.lineNumber >= 0 ? `:${frame.lineNumber + 1}` : '';
  return `${frame.functionName || '(anonymous)'} ${file}${line}`.trim();
}

function main(): void {
  const [path, rowsArg, filter] = process.argv.slice(2);
  if (!path) throw new Error('usage: profile-top.ts <file.cpuprofile> [rows] [filter]');
  const rows = Number(rowsArg ?? 25);
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const node = byId.get(id);
    if (!node) return;
    const name = label(node.callFrame);
    if (node.callFrame.functionName === '(idle)') idle += dt;
    self.set(name, (self.get(name) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur);
      if (!n) break;
      const key = label(n.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
    }
  });
  const busy = total - idle;
  const print = (title: string, map: Map<string, number>, keep: (name: string) => boolean) => {
    console.log(`\n${title} (share of ${(busy / 1000).toFixed(0)} ms busy; ${(idle / 1000).toFixed(0)} ms idle not counted)`);
    for (const [name, t] of [...map].filter(([n]) => keep(n)).sort((a, b) => b[1] - a[1]).slice(0, rows)) {
      console.log(`${((100 * t) / busy).toFixed(1).padStart(6)}%  ${(t / 1000).toFixed(0).padStart(7)} ms  ${name}`);
    }
  };
  print('self time', self, (n) => !n.startsWith('(idle)'));
  print('inclusive time', inclusive, (n) => !n.startsWith('(idle)') && !n.startsWith('(root)') && (!filter || n.includes(filter)));
}

main();
