/**
 * A fixed-size byte ring that keeps the last `capacity` bytes ever written.
 *
 * It backs a task's bounded output preview: the full output goes to the artifact file, so the
 * ring only has to remember the tail, and its memory never grows with the output.
 */
export class ByteRing {
  readonly capacity: number;
  readonly #buf: Buffer;
  /** Physical index of the oldest retained byte. */
  #start = 0;
  #size = 0;
  #total = 0;

  /** @param capacity bytes to retain; a positive integer. */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) {
      throw new RangeError(`ByteRing capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
    this.#buf = Buffer.alloc(capacity);
  }

  /** Bytes ever written, including the ones no longer retained. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Bytes currently retained (≤ capacity). */
  get size(): number {
    return this.#size;
  }

  /** True once any byte has been dropped to make room. */
  get truncated(): boolean {
    return this.#total > this.#size;
  }

  write(chunk: Uint8Array): void {
    const n = chunk.length;
    if (n === 0) return;
    this.#total += n;
    const cap = this.capacity;
    if (n >= cap) {
      this.#buf.set(chunk.subarray(n - cap), 0);
      this.#start = 0;
      this.#size = cap;
      return;
    }
    const end = (this.#start + this.#size) % cap;
    const first = Math.min(n, cap - end);
    this.#buf.set(chunk.subarray(0, first), end);
    if (first < n) this.#buf.set(chunk.subarray(first), 0);
    const size = this.#size + n;
    if (size > cap) {
      this.#start = (this.#start + size - cap) % cap;
      this.#size = cap;
    } else {
      this.#size = size;
    }
  }

  /** A copy of the last `maxBytes` retained bytes (all retained bytes by default). */
  tail(maxBytes?: number): Buffer {
    const n = clampCount(maxBytes, this.#size);
    const out = Buffer.alloc(n);
    if (n === 0) return out;
    const cap = this.capacity;
    const from = (this.#start + this.#size - n) % cap;
    const first = Math.min(n, cap - from);
    this.#buf.copy(out, 0, from, from + first);
    if (first < n) this.#buf.copy(out, first, 0, n - first);
    return out;
  }

  /**
   * The tail decoded as UTF-8, from at most `maxBytes` bytes (default: everything retained).
   *
   * A window that starts inside a multi-byte character would decode to a replacement character,
   * so its orphaned continuation bytes are skipped; likewise a character still incomplete at the
   * end (its remaining bytes not yet written) is left out rather than shown as garbage. Since
   * each decoded UTF-16 unit consumes at least one byte, the string's `length` is ≤ `maxBytes`.
   */
  preview(maxBytes?: number): string {
    const bytes = this.tail(maxBytes);
    const startsMidStream = bytes.length < this.#total;
    const from = startsMidStream ? leadingContinuationBytes(bytes) : 0;
    const to = bytes.length - incompleteTrailingBytes(bytes, from);
    return bytes.toString('utf8', from, to);
  }
}

function clampCount(requested: number | undefined, available: number): number {
  if (requested === undefined) return available;
  if (!Number.isFinite(requested) || requested <= 0) return 0;
  return Math.min(Math.floor(requested), available);
}

const isContinuation = (byte: number): boolean => (byte & 0xc0) === 0x80;

/** Continuation bytes at the start (a UTF-8 character has at most 3). */
function leadingContinuationBytes(bytes: Buffer): number {
  let i = 0;
  while (i < 3 && i < bytes.length && isContinuation(bytes[i] ?? 0)) i++;
  return i;
}

/** Length of a final multi-byte sequence whose lead byte promises more bytes than follow it. */
function incompleteTrailingBytes(bytes: Buffer, from: number): number {
  for (let back = 1; back <= 3 && bytes.length - back >= from; back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if (isContinuation(byte)) continue;
    const expected = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return expected > back ? back : 0;
  }
  return 0;
}
