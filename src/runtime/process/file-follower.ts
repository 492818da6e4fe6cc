import { close, openSync, read, watch, type FSWatcher } from 'node:fs';

const READ_BUFFER_BYTES = 64 * 1024;

export interface FileFollowerOptions {
  /** A file that other processes append to. */
  path: string;
  /**
   * Receives each chunk read. The buffer is reused for the next read, so a consumer that keeps
   * bytes must copy them; that reuse is what keeps a huge output from producing garbage.
   */
  onData: (chunk: Buffer) => void;
  onError: (error: Error) => void;
  /** Safety-net polling period, for file systems where change notifications do not arrive. */
  pollMs: number;
}

/**
 * Follows a growing file like `tail -f`, from its first byte: a change notification (inotify on
 * Linux) or the poll triggers a read up to the current end.
 */
export class FileFollower {
  readonly #fd: number;
  readonly #options: FileFollowerOptions;
  readonly #buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  readonly #watcher: FSWatcher | null;
  readonly #poll: NodeJS.Timeout;
  #position = 0;
  #reading = false;
  #readAgain = false;
  #stopped = false;
  #atEndWaiters: Array<() => void> = [];

  /** Opens the file synchronously; throws if it cannot be read. */
  constructor(options: FileFollowerOptions) {
    this.#options = options;
    this.#fd = openSync(options.path, 'r');
    this.#watcher = watchQuietly(options.path, () => this.#kick());
    this.#poll = setInterval(() => this.#kick(), options.pollMs);
    this.#poll.unref();
  }

  /** Bytes read so far. */
  get position(): number {
    return this.#position;
  }

  /** Resolves once everything written before this call has been read (or reading failed). */
  catchUp(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.#atEndWaiters.push(resolve);
      this.#kick();
    });
  }

  /** Stops following and closes the file; call after a final {@link catchUp}. */
  close(): Promise<void> {
    this.#stop();
    return new Promise((resolve) => close(this.#fd, () => resolve()));
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#reading) {
      // A read already in flight may have started before this write: go round once more.
      this.#readAgain = true;
      return;
    }
    this.#reading = true;
    this.#readAgain = false;
    this.#readNext();
  }

  #readNext(): void {
    read(this.#fd, this.#buffer, 0, this.#buffer.length, this.#position, (error, bytesRead) => {
      if (this.#stopped) return;
      if (error) {
        this.#stop();
        this.#options.onError(error);
        return;
      }
      if (bytesRead > 0) {
        this.#position += bytesRead;
        this.#options.onData(this.#buffer.subarray(0, bytesRead));
        this.#readNext();
        return;
      }
      if (this.#readAgain) {
        this.#readAgain = false;
        this.#readNext();
        return;
      }
      this.#reading = false;
      this.#releaseWaiters();
    });
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#poll);
    this.#watcher?.close();
    this.#releaseWaiters();
  }

  #releaseWaiters(): void {
    for (const resolve of this.#atEndWaiters.splice(0)) resolve();
  }
}

function watchQuietly(path: string, onChange: () => void): FSWatcher | null {
  try {
    const watcher = watch(path, { persistent: false }, onChange);
    // Without notifications the poll still finds new data, only later.
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return null;
  }
}
