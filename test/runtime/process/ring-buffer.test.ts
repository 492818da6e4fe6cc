import { describe, expect, it } from 'vitest';
import { ByteRing } from '../../../src/runtime/process/index.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('ByteRing', () => {
  it('keeps everything while under capacity', () => {
    const ring = new ByteRing(16);
    ring.write(bytes('hello '));
    ring.write(bytes('world'));
    expect(ring.preview()).toBe('hello world');
    expect(ring.totalBytes).toBe(11);
    expect(ring.size).toBe(11);
    expect(ring.truncated).toBe(false);
  });

  it('keeps the last capacity bytes across wrap-around', () => {
    const ring = new ByteRing(8);
    ring.write(bytes('abcdef'));
    ring.write(bytes('ghij'));
    expect(ring.preview()).toBe('cdefghij');
    ring.write(bytes('klm'));
    expect(ring.preview()).toBe('fghijklm');
    expect(ring.tail(3).toString()).toBe('klm');
    expect(ring.totalBytes).toBe(13);
    expect(ring.size).toBe(8);
  });

  it('keeps only the tail of a chunk larger than the capacity', () => {
    const ring = new ByteRing(4);
    ring.write(bytes('xy'));
    ring.write(bytes('0123456789'));
    expect(ring.preview()).toBe('6789');
    ring.write(bytes('ab'));
    expect(ring.preview()).toBe('89ab');
    expect(ring.totalBytes).toBe(14);
  });

  it('sets truncated exactly when a byte is dropped', () => {
    const ring = new ByteRing(4);
    ring.write(bytes('abcd'));
    expect(ring.truncated).toBe(false);
    ring.write(bytes('e'));
    expect(ring.truncated).toBe(true);
  });

  it('limits a preview to maxBytes of the tail', () => {
    const ring = new ByteRing(10);
    ring.write(bytes('0123456789'));
    expect(ring.preview(4)).toBe('6789');
    expect(ring.preview(0)).toBe('');
    expect(ring.preview(100)).toBe('0123456789');
  });

  it('does not start a preview in the middle of a multi-byte character', () => {
    // 'é' is 2 bytes, '€' 3, '😀' 4.
    const ring = new ByteRing(64);
    ring.write(bytes('aé€😀z'));
    expect(ring.preview(2)).toBe('z'); // last byte of 😀, then z
    expect(ring.preview(4)).toBe('z');
    expect(ring.preview(5)).toBe('😀z');
    expect(ring.preview(7)).toBe('😀z'); // two trailing bytes of €
    expect(ring.preview(8)).toBe('€😀z');
  });

  it('drops the orphaned bytes of a character cut off by wrap-around', () => {
    const ring = new ByteRing(5);
    ring.write(bytes('€€')); // 6 bytes: the first byte of the first € is dropped
    expect(ring.truncated).toBe(true);
    expect(ring.preview()).toBe('€');
    expect(ring.preview()).not.toContain('\uFFFD');
  });

  it('leaves out a character whose remaining bytes have not arrived yet', () => {
    const ring = new ByteRing(16);
    const euro = bytes('€');
    ring.write(Buffer.concat([bytes('ab'), euro.subarray(0, 2)]));
    expect(ring.preview()).toBe('ab');
    ring.write(euro.subarray(2));
    expect(ring.preview()).toBe('ab€');
  });

  it('keeps invalid bytes at the very start of the output visible', () => {
    const ring = new ByteRing(8);
    ring.write(Buffer.from([0x80, 0x41]));
    expect(ring.preview()).toBe('\uFFFDA');
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new ByteRing(0)).toThrow(RangeError);
    expect(() => new ByteRing(1.5)).toThrow(RangeError);
  });
});
