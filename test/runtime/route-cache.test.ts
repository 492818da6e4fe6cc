import { describe, expect, it } from 'vitest';
import { RouteCache } from '../../src/runtime/host/route-cache.js';

/** The routes a cluster node remembers for agents other nodes hold: bounded in age and in size. */
describe('RouteCache', () => {
  it('forgets an entry once it is maxAgeMs old, and a set starts its age again', () => {
    let now = 0;
    const cache = new RouteCache({ maxAgeMs: 100, maxEntries: 10, now: () => now });
    cache.set('a', { holder: 'n1', url: 'http://n1' });
    now = 99;
    expect(cache.get('a')).toEqual({ holder: 'n1', url: 'http://n1' });
    cache.set('a', { holder: 'n2', url: 'http://n2' });
    now = 198;
    expect(cache.get('a')).toEqual({ holder: 'n2', url: 'http://n2' });
    now = 199;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps at most maxEntries, the oldest set going first', () => {
    let now = 0;
    const cache = new RouteCache({ maxAgeMs: 1_000, maxEntries: 2, now: () => now });
    cache.set('a', { holder: 'n1', url: 'http://n1' });
    now = 1;
    cache.set('b', { holder: 'n1', url: 'http://n1' });
    now = 2;
    cache.set('a', { holder: 'n3', url: 'http://n3' });
    cache.set('c', { holder: 'n2', url: 'http://n2' });
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual({ holder: 'n3', url: 'http://n3' });
    expect(cache.get('c')).toEqual({ holder: 'n2', url: 'http://n2' });
    cache.delete('a');
    expect(cache.get('a')).toBeUndefined();
  });

  it('a confirmation (the holder served a request forwarded under the entry) starts the age again, only for the same holder and address, and never revives an expired entry', () => {
    let now = 0;
    const cache = new RouteCache({ maxAgeMs: 100, maxEntries: 10, now: () => now });
    cache.set('a', { holder: 'n1', url: 'http://n1' });
    now = 90;
    cache.confirm('a', { holder: 'n2', url: 'http://n2' });
    cache.confirm('a', { holder: 'n1', url: 'http://n1' });
    now = 180;
    expect(cache.get('a')).toEqual({ holder: 'n1', url: 'http://n1' });
    now = 190;
    expect(cache.get('a')).toBeUndefined();
    cache.set('b', { holder: 'n1', url: 'http://n1' });
    now = 290;
    cache.confirm('b', { holder: 'n1', url: 'http://n1' });
    expect(cache.get('b')).toBeUndefined();
    cache.confirm('c', { holder: 'n1', url: 'http://n1' });
    expect(cache.get('c')).toBeUndefined();
  });
});
