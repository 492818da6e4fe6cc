import { Runtime } from '../src/runtime/runtime.js';
import { PostgresStore } from '../src/store/index.js';
import { startThrowawayCluster } from '../test/pg/throwaway-cluster.js';
import { interleavedThroughput } from './lib/durable-throughput.js';
import { scratchDir } from './lib/fixtures.js';
import { createDatabase } from './lib/pg-admin.js';

/**
 * Only bench:cluster's durable figures (issue 19): prompt and wake throughput through one runtime
 * on PostgreSQL against one on lowdb, interleaved A B B A (`lib/durable-throughput.ts`), on a
 * throwaway PostgreSQL cluster; prints each pair's figures and ratios. Two minutes, against
 * bench:cluster's eleven.
 *
 *   npx tsx bench/cluster-durable-only.ts
 *
 * `CLUSTER_PAIRS` (default 2) pairs, `CLUSTER_OPS` (default 2000) operations per measurement.
 */
const PAIRS = Number(process.env['CLUSTER_PAIRS'] ?? 2);

async function main(): Promise<void> {
  const cluster = await startThrowawayCluster();
  const dir = scratchDir('durable-only');
  try {
    const pg = await Runtime.open({ store: new PostgresStore({ url: await createDatabase(cluster, 'durable_only') }), nodeId: 'bench-pg' });
    const lowdb = await Runtime.open({ dataDir: dir.dir, nodeId: 'bench-lowdb' });
    const ops = await interleavedThroughput(pg, lowdb, PAIRS);
    ops.ratios.forEach((ratio, i) => {
      const rates = (list: typeof ops.pg, op: 'prompt' | 'wake') => list.slice(2 * i, 2 * i + 2).map((o) => o[op].toFixed(0)).join(', ');
      console.log(
        `pair ${i + 1}: PostgreSQL prompt ${rates(ops.pg, 'prompt')} wake ${rates(ops.pg, 'wake')} | lowdb prompt ${rates(ops.lowdb, 'prompt')} wake ${rates(ops.lowdb, 'wake')} ops/s | PostgreSQL / lowdb prompt ${ratio.prompt.toFixed(3)}, wake ${ratio.wake.toFixed(3)}`,
      );
    });
    await pg.close();
    await lowdb.close();
  } finally {
    dir.remove();
    cluster.stop();
  }
}

main().catch((error: unknown) => {
  console.error('cluster-durable-only crashed:', error);
  process.exit(1);
});
