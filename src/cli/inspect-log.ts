import { createWriteStream } from 'node:fs';
import type { InspectionEvent } from 'xstate';

/** One JSON line per XState inspection event, reduced to what replays offline (no live refs). */
export function inspectionRecord(event: InspectionEvent, at: Date): Record<string, unknown> {
  const actor = (event.actorRef as { id?: string }).id ?? null;
  const base = { at: at.toISOString(), type: event.type, actor };
  switch (event.type) {
    case '@xstate.event':
      return { ...base, event: event.event, source: (event.sourceRef as { id?: string } | undefined)?.id ?? null };
    case '@xstate.snapshot': {
      const snapshot = event.snapshot as { value?: unknown; status?: string };
      return { ...base, event: event.event, value: snapshot.value ?? null, status: snapshot.status ?? null };
    }
    case '@xstate.actor':
      return base;
    default:
      return base;
  }
}

/** Appends inspection events to `path` as JSONL; returns the observer and a close function. */
export function inspectLog(path: string, now: () => Date = () => new Date()): { inspect: (event: InspectionEvent) => void; close: () => Promise<void> } {
  const stream = createWriteStream(path, { flags: 'a' });
  return {
    inspect: (event) => {
      stream.write(`${JSON.stringify(inspectionRecord(event, now()))}\n`);
    },
    close: () => new Promise((resolve) => stream.end(resolve)),
  };
}
