import { describe, expect, it } from 'vitest';
import { promised } from '../../src/runtime/promised.js';

describe('promised', () => {
  it('turns a synchronous throw into a rejection, as an async function would', async () => {
    const failure = new Error('refused at once');
    let result: Promise<number> | undefined;
    expect(() => {
      result = promised<number>(() => {
        throw failure;
      });
    }).not.toThrow();
    await expect(result).rejects.toBe(failure);
  });

  it('hands back the promise the work returned, not a wrapper around it', async () => {
    const work = Promise.resolve(7);
    const result = promised(() => work);
    expect(result).toBe(work);
    await expect(result).resolves.toBe(7);
  });
});
