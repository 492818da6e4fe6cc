import { LowdbStore } from '../../src/store/index.js';

/**
 * A fresh process's restart of the store: `open()` + `listRoster()` over the data directory in
 * argv[2]; prints `{seconds, agents, rss_mib, rss_growth_mib, heap_mib}` as one JSON line. Used by bench/roster.ts.
 */
const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('usage: roster-child.ts <dataDir>');
const rssBefore = process.memoryUsage().rss;
const started = performance.now();
const store = new LowdbStore({ dataDir, exclusiveProcessLock: false });
await store.open();
const roster = await store.listRoster();
const seconds = (performance.now() - started) / 1000;
const { rss, heapUsed } = process.memoryUsage();
console.log(JSON.stringify({ seconds, agents: roster.length, rss_mib: rss / 2 ** 20, rss_growth_mib: (rss - rssBefore) / 2 ** 20, heap_mib: heapUsed / 2 ** 20 }));
