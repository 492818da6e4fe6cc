import { crc32 } from 'node:zlib';

/** `[u32 LE payload length][u32 LE crc32 of the payload][payload]`. */
const HEADER_BYTES = 8;

/** One buffer holding every payload as a frame, so a batch is a single write. */
export function encodeFrames(payloads: string[]): Buffer {
  const lengths = payloads.map((payload) => Buffer.byteLength(payload, 'utf8'));
  const out = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + HEADER_BYTES + length, 0));
  let offset = 0;
  for (const [i, payload] of payloads.entries()) {
    const length = lengths[i] ?? 0;
    out.writeUInt32LE(length, offset);
    out.write(payload, offset + HEADER_BYTES, length, 'utf8');
    out.writeUInt32LE(crc32(out.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + length)), offset + 4);
    offset += HEADER_BYTES + length;
  }
  return out;
}

/**
 * The whole frames at the start of `bytes`. A crash mid-write leaves a torn last frame (short, or
 * with a checksum that does not match); it and anything after it are not records. `validBytes` is
 * where they start.
 */
export function decodeFrames(bytes: Buffer): { payloads: string[]; validBytes: number } {
  const payloads: string[] = [];
  let offset = 0;
  while (offset + HEADER_BYTES <= bytes.length) {
    const length = bytes.readUInt32LE(offset);
    const end = offset + HEADER_BYTES + length;
    if (end > bytes.length) break;
    const body = bytes.subarray(offset + HEADER_BYTES, end);
    if (crc32(body) !== bytes.readUInt32LE(offset + 4)) break;
    payloads.push(body.toString('utf8'));
    offset = end;
  }
  return { payloads, validBytes: offset };
}
