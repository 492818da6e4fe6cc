/**
 * A memoized load that is redone once the store's lease generation has moved on. The generation
 * changes whenever this instance acquires a new fencing token: another writer may have written in
 * between, so state cached under the old token can no longer be trusted.
 */
export class CachedLoad {
  private promise: Promise<void> | null = null;
  private settled = false;
  private generation = -1;

  constructor(
    private readonly load: () => Promise<void>,
    private readonly currentGeneration: () => number,
  ) {}

  /**
   * Loads when nothing is loaded (or the last load failed). With `mayRefresh`, also reloads a
   * settled load from an older generation; pass it only when no write can be in flight, because
   * a load also repairs the files.
   */
  ensure(mayRefresh: boolean): Promise<void> {
    const generation = this.currentGeneration();
    if (this.promise !== null && mayRefresh && this.settled && this.generation !== generation) this.promise = null;
    if (this.promise === null) {
      this.generation = generation;
      this.settled = false;
      const loading: Promise<void> = this.load().then(
        () => {
          if (this.promise === loading) this.settled = true;
        },
        (err: unknown) => {
          if (this.promise === loading) this.promise = null;
          throw err;
        },
      );
      this.promise = loading;
    }
    return this.promise;
  }

  /** Whether `loading` (from `ensure`) is still the load in effect. */
  isCurrent(loading: Promise<void>): boolean {
    return this.promise === loading;
  }

  /** Drops the loaded state; the next `ensure` loads again. Only call it once a load has settled. */
  forget(): void {
    this.promise = null;
  }
}
