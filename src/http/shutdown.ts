/**
 * Long-lived requests (SSE streams, turn-claim long polls) would hold `app.close()` open
 * indefinitely; each registers an abort callback here and the app's `preClose` hook fires them all.
 */
export class ShutdownTracker {
  #closing = false;
  readonly #aborts = new Set<() => void>();

  get closing(): boolean {
    return this.#closing;
  }

  get openCount(): number {
    return this.#aborts.size;
  }

  /** Registers `abort`; returns the unregister function. Fires `abort` at once if already closing. */
  track(abort: () => void): () => void {
    if (this.#closing) {
      abort();
      return () => {};
    }
    this.#aborts.add(abort);
    return () => {
      this.#aborts.delete(abort);
    };
  }

  /** An AbortSignal that fires on shutdown or when `also` fires; `release` unregisters it. */
  signal(also?: AbortSignal): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    const abort = (): void => controller.abort();
    const untrack = this.track(abort);
    also?.addEventListener('abort', abort, { once: true });
    if (also?.aborted) abort();
    return {
      signal: controller.signal,
      release: () => {
        untrack();
        also?.removeEventListener('abort', abort);
      },
    };
  }

  closeAll(): void {
    this.#closing = true;
    const aborts = [...this.#aborts];
    this.#aborts.clear();
    for (const abort of aborts) abort();
  }
}
