import type { TurnOffer, TurnResult } from '../../../src/domain/index.js';
import type { TurnRunner } from '../../../src/runtime/runners/turn-runner.js';

interface Parked {
  offer: TurnOffer;
  finish: (result: TurnResult) => void;
}

/**
 * The runtime's `runner` option: every turn waits until the path finishes it, so the agent stays
 * `awake_running` for as long as the model does, without a worker polling for it.
 */
export class ControlledRunner implements TurnRunner {
  private readonly parked = new Map<string, Parked>();
  /** Aborted turns keep waiting until the path finishes them (a runner that finishes late). */
  holdAborted = false;

  run(offer: TurnOffer, signal: AbortSignal): Promise<TurnResult> {
    return new Promise((resolve) => {
      const finish = (result: TurnResult): void => {
        this.parked.delete(offer.run_id);
        resolve(result);
      };
      this.parked.set(offer.run_id, { offer, finish });
      signal.addEventListener('abort', () => this.holdAborted || finish({ actions: [], text: 'aborted' }), { once: true });
    });
  }

  /** The turns waiting in the runner, oldest first. */
  parkedRuns(): string[] {
    return [...this.parked.keys()];
  }

  isParked(runId: string): boolean {
    return this.parked.has(runId);
  }

  /** Ends the turn `runId` with `result`; false when no such turn waits. */
  finish(runId: string, result: TurnResult): boolean {
    const parked = this.parked.get(runId);
    if (!parked) return false;
    parked.finish(result);
    return true;
  }

  /** Ends every waiting turn (teardown), so no runner promise outlives its runtime. */
  finishAll(): void {
    for (const parked of [...this.parked.values()]) parked.finish({ actions: [] });
  }
}
