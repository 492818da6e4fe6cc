/**
 * What the capability index of PostgreSQL schema 5 costs a commit (stop 26): 200 agents, each with
 * one commit in flight, 30 rounds per run, every commit changing the roster (not its hashes), with
 * the `agents_capabilities_changed` trigger enabled and disabled, interleaved A B B A, three times.
 * `WHEN=false` replaces its condition with `false` (the trigger machinery alone); `WHEN=regex` with
 * the regular expression the first draft compared (two `roster_trigger_hashes` calls); default: the
 * migration as it is (two `split_part`s). Run: `npx tsx bench/pg-capability-trigger.ts`.
 */
import pg from 'pg';
import { PostgresStore } from '../src/store/index.js';
import { startThrowawayCluster } from '../test/pg/throwaway-cluster.js';
const cluster = await startThrowawayCluster();
const AGENTS = 200;
const ROUNDS = 30;
try {
  const url = cluster.url('postgres');
  const store = new PostgresStore({ url });
  await store.open();
  const lease = await store.acquireLease('h', 600000, new Date());
  const versions = new Map<string, number>();
  const doc = (i: number, r: number) => ({ state: { agent_id: `a${i}`, status: r % 2 ? 'asleep' : 'awake', v: r }, queue: [], big: 'x'.repeat(400) });
  const roster = (i: number, r: number) => ({ listing: { status: r % 2 ? 'asleep' : 'awake_running', phase: 'p', pending: r }, needs_recovery: false, trigger_hashes: [`hash${i}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`] });
  await Promise.all(Array.from({ length: AGENTS }, async (_, i) => { await store.commit({ agent_id: `a${i}`, expected_version: null, doc: doc(i, 0), events: [], fencing_token: lease.fencing_token, roster: roster(i, 0) }); versions.set(`a${i}`, 1); }));
  const c = new pg.Client({ host: cluster.socketDir, port: cluster.tcpPort, user: cluster.user, database: 'postgres' });
  await c.connect();
  let r = 1;
  const run = async () => {
    const t = performance.now();
    for (let k = 0; k < ROUNDS; k++, r++) {
      await Promise.all(Array.from({ length: AGENTS }, async (_, i) => { const id = `a${i}`; const v = versions.get(id) ?? 0; await store.commit({ agent_id: id, expected_version: v, doc: doc(i, r), events: [{ type: 'transition_committed', payload: { r }, ts: new Date().toISOString() }], fencing_token: lease.fencing_token, roster: roster(i, r) }); versions.set(id, v + 1); }));
    }
    return (AGENTS * ROUNDS * 1000) / (performance.now() - t);
  };
  const variant = process.env['WHEN'];
  if (variant !== undefined) {
    const when = variant === 'false' ? 'false' : 'holon.roster_trigger_hashes(OLD.roster) IS DISTINCT FROM holon.roster_trigger_hashes(NEW.roster)';
    await c.query('DROP TRIGGER agents_capabilities_changed ON holon.agents');
    await c.query(`CREATE TRIGGER agents_capabilities_changed AFTER UPDATE OF roster ON holon.agents FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION holon.index_capabilities()`);
  }
  const on = () => c.query('ALTER TABLE holon.agents ENABLE TRIGGER agents_capabilities_changed');
  const off = () => c.query('ALTER TABLE holon.agents DISABLE TRIGGER agents_capabilities_changed');
  await run();
  for (let k = 0; k < 3; k++) {
    await on(); const a1 = await run();
    await off(); const b1 = await run(); const b2 = await run();
    await on(); const a2 = await run();
    console.log(`with trigger ${a1.toFixed(0)}, ${a2.toFixed(0)}; without ${b1.toFixed(0)}, ${b2.toFixed(0)}; ratio ${((a1 + a2) / (b1 + b2)).toFixed(3)}`);
  }
  await c.end();
  await store.close();
} finally { cluster.stop(); }
