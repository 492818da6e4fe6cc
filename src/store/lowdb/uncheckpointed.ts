import type { AgentWrite } from './agent-files.js';
import type { EventLine } from './event-log.js';

/** An agent's acknowledged state that its files do not hold yet: its latest write and the events after the files' end. */
export interface UncheckpointedAgent {
  write: AgentWrite;
  /** Consecutive, ascending; the last one is `write.last_event_seq`. */
  lines: EventLine[];
}

/**
 * Commits acknowledged by the write-ahead log but not yet in doc.json and the segments: reads are
 * served from here. Two generations: `open` takes new commits, `sealed` is what the running
 * checkpoint round is writing to the files; it is dropped once they hold it. Bounded by the
 * checkpoint trigger: every record here is also in the log since the last rotation.
 */
export class Uncheckpointed {
  private open = new Map<string, UncheckpointedAgent>();
  private sealed = new Map<string, UncheckpointedAgent>();

  /** Distinct agents held. */
  get size(): number {
    let n = this.sealed.size;
    for (const agent_id of this.open.keys()) if (!this.sealed.has(agent_id)) n += 1;
    return n;
  }

  /** Distinct agents committed since the running round (or the last one) began. */
  get openSize(): number {
    return this.open.size;
  }

  /** After recovery: what the files lack (nothing when this instance repaired them). */
  replace(agents: Map<string, UncheckpointedAgent>): void {
    this.open = agents;
    this.sealed = new Map();
  }

  add(agent_id: string, write: AgentWrite, lines: EventLine[]): void {
    const held = this.open.get(agent_id);
    if (held === undefined) this.open.set(agent_id, { write, lines });
    else {
      held.write = write;
      for (const line of lines) held.lines.push(line);
    }
  }

  /** The agent's latest acknowledged write, when its doc.json does not hold it. */
  write(agent_id: string): AgentWrite | undefined {
    return (this.open.get(agent_id) ?? this.sealed.get(agent_id))?.write;
  }

  /**
   * The agent's events its segments do not hold, ascending. Take them before reading the files:
   * a round drops them only once the files hold them.
   */
  lines(agent_id: string): EventLine[] {
    const sealed = this.sealed.get(agent_id)?.lines ?? [];
    const open = this.open.get(agent_id)?.lines ?? [];
    return sealed.length === 0 ? open : open.length === 0 ? sealed : [...sealed, ...open];
  }

  /** Hands the commits so far to a checkpoint round; new ones start a new generation. */
  seal(): Map<string, UncheckpointedAgent> {
    this.sealed = this.open;
    this.open = new Map();
    return this.sealed;
  }

  /** The round's files hold the sealed generation. */
  settle(): void {
    this.sealed = new Map();
  }

  /** The round failed: its commits stay readable (and are written by the next round). */
  unseal(): void {
    for (const [agent_id, later] of this.open) {
      const earlier = this.sealed.get(agent_id);
      if (earlier === undefined) this.sealed.set(agent_id, later);
      else this.sealed.set(agent_id, { write: later.write, lines: [...earlier.lines, ...later.lines] });
    }
    this.open = this.sealed;
    this.sealed = new Map();
  }
}
