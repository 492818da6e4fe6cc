import { describe, expect, it } from 'vitest';
import { Soon, SoonBatches } from '../../src/runtime/soon.js';

const until = async (reached: () => boolean): Promise<void> => {
  while (!reached()) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('Soon', () => {
  it('reports a failed work item instead of swallowing it', async () => {
    const errors: string[] = [];
    const soon = new Soon(async () => { throw new Error('store down'); }, (agentId, error) => errors.push(`${agentId}:${(error as Error).message}`));
    soon.ask('a');
    soon.ask('a');
    await until(() => errors.length > 0);
    expect(errors).toEqual(['a:store down']);
  });
});

describe('SoonBatches', () => {
  it('puts items back and asks again when the operation fails after taking them', async () => {
    const errors: unknown[] = [];
    const batches: string[][] = [];
    let failures = 1;
    const soon = new SoonBatches<string>(async (_agentId, take) => {
      const items = take();
      if (failures-- > 0) throw new Error('launch failed once');
      batches.push(items);
    }, (_agentId, error) => errors.push(error));
    soon.add('a', 't1');
    soon.add('a', 't2');
    await until(() => batches.length > 0);
    expect(errors).toHaveLength(1);
    expect(batches).toEqual([['t1', 't2']]);
  });

  it('loses neither the failed items nor items added while the operation ran', async () => {
    const batches: string[][] = [];
    let failures = 1;
    const soon = new SoonBatches<string>(async (_agentId, take) => {
      const items = take();
      if (failures-- > 0) {
        soon.add('a', 't3');
        throw new Error('failed');
      }
      batches.push(items);
    }, () => undefined);
    soon.add('a', 't1');
    soon.add('a', 't2');
    await until(() => batches.flat().length >= 3);
    expect(batches.flat().sort()).toEqual(['t1', 't2', 't3']);
    expect(batches.flat()).toHaveLength(3);
  });

  it('with retry: false reports the failure and does not run the failed items again', async () => {
    const errors: unknown[] = [];
    const runs: string[][] = [];
    const soon = new SoonBatches<string>(async (_agentId, take) => {
      runs.push(take());
      throw new Error('started, then the commit failed');
    }, (_agentId, error) => errors.push(error), { retry: false });
    soon.add('a', 't1');
    await until(() => errors.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(runs).toEqual([['t1']]);
    soon.add('a', 't2');
    await until(() => runs.length > 1);
    expect(runs).toEqual([['t1'], ['t2']]);
  });
});
