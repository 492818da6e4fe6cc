import { describe, expect, it } from 'vitest';
import { isoText } from '../../src/runtime/clock.js';

describe('isoText', () => {
  it('is toISOString for every date, formatted once per millisecond', () => {
    const dates = [0, 1, 1, 1_765_000_000_000, 1_765_000_000_000, 1_765_000_000_001, 1, -1_000].map((ms) => new Date(ms));
    for (const date of dates) expect(isoText(date)).toBe(date.toISOString());
    // A clock that goes back (a test clock) reads right too.
    expect(isoText(new Date(5))).toBe('1970-01-01T00:00:00.005Z');
    expect(isoText(new Date(4))).toBe('1970-01-01T00:00:00.004Z');
  });
});
