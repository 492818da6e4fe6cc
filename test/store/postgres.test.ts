import { describe, it } from 'vitest';
import { PostgresStore } from '../../src/store/index.js';
import { testDatabase } from '../pg/shared-cluster.js';
import { storeContract } from './contract.js';

const db = await testDatabase('store_contract');

if (db === null) {
  describe.skip('postgres store contract (PostgreSQL is not installed)', () => it('skipped', () => undefined));
} else {
  let schemas = 0;
  // A schema per test: every test starts from an empty store.
  storeContract('postgres', async () => new PostgresStore({ url: db.url, schema: `contract_${(schemas += 1)}` }), 'per-agent');
}
