/**
 * `work()`, with a synchronous throw turned into a rejection: an async function's contract
 * without its layers of promises. For the hot paths every accepted input takes (each layer there
 * costs a promise and a microtask per input, bench:events (a)); elsewhere write `async`.
 * @example return promised(() => this.store.commit(fenced(commit)));
 */
export function promised<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error);
  }
}
