import { readdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentEvent, DomainError } from '../../domain/index.js';
import type { OpenFiles } from './open-files.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { fsyncFile, isNotFound } from './fs-util.js';

/** Events per segment file; a segment is never rewritten once the log has moved past it. */
export const SEGMENT_SIZE = 1000;

export function segmentOf(event_seq: number): number {
  return Math.floor((event_seq - 1) / SEGMENT_SIZE);
}

export function segmentFileName(segment: number): string {
  return `${String(segment).padStart(8, '0')}.jsonl`;
}

const SEGMENT_NAME = /^(\d+)\.jsonl$/;

/** One serialized event, ready to append: `line` is its JSON without the newline. */
export interface EventLine {
  event_seq: number;
  line: string;
}

/**
 * One agent's append-only event log: `<dir>/<segment>.jsonl`, one JSON event per line, line `i`
 * of segment `s` holding `event_seq = s * SEGMENT_SIZE + i + 1`. Appends touch only the open
 * segment, so their cost does not depend on the log's length. The object holds no state: the
 * agent's `last_event_seq` (in the roster index) says where the acknowledged part ends.
 */
export class AgentEventLog {
  constructor(
    readonly dir: string,
    private readonly agent_id: string,
    private readonly handles: OpenFiles,
    private readonly directories: DirectorySyncer,
  ) {}

  /**
   * Makes the files end exactly after `last_event_seq`: deletes segments past it, truncates the
   * last one after its last acknowledged line (dropping unacknowledged events and a torn line).
   */
  async recover(last_event_seq: number): Promise<void> {
    const kept = await this.removeSegmentsPast(last_event_seq);
    if (last_event_seq === 0) return;
    const lastSegment = segmentOf(last_event_seq);
    if (!kept.includes(lastSegment)) throw this.corrupt(`segment ${segmentFileName(lastSegment)} is missing`);
    await this.cutAfter(lastSegment, last_event_seq);
  }

  /**
   * Keeps the longest prefix of whole, dense events up to `max_seq` and cuts everything after
   * it; returns the prefix's last `event_seq`. Recovery then appends the rest from the
   * write-ahead log. Lines up to `trusted_seq` (made durable by a checkpoint) are counted, not
   * parsed.
   */
  async recoverPrefix(max_seq: number, trusted_seq: number): Promise<number> {
    const kept = await this.removeSegmentsPast(max_seq);
    const segment = kept.at(-1);
    if (segment === undefined) return 0;
    const path = this.segmentPath(segment);
    const bytes = await readFile(path);
    let end = 0;
    let seq = segment * SEGMENT_SIZE;
    while (seq < max_seq) {
      const newline = bytes.indexOf(10, end);
      if (newline === -1) break;
      if (seq >= trusted_seq && readSeq(bytes.subarray(end, newline).toString('utf8')) !== seq + 1) break;
      end = newline + 1;
      seq += 1;
    }
    if (end < bytes.length) await this.truncateSegment(path, end);
    return seq;
  }

  /** Appends consecutive events to their segments (durable through the write-ahead log, not here). */
  append(lines: EventLine[]): void {
    const bySegment = new Map<number, string[]>();
    for (const { event_seq, line } of lines) {
      const segment = segmentOf(event_seq);
      const group = bySegment.get(segment);
      if (group === undefined) bySegment.set(segment, [line]);
      else group.push(line);
    }
    for (const [segment, group] of bySegment) {
      this.handles.append(this.segmentPath(segment), Buffer.from(`${group.join('\n')}\n`, 'utf8'));
    }
  }

  /** fdatasyncs the segments holding `from_seq..to_seq` (a checkpoint). */
  async sync(from_seq: number, to_seq: number): Promise<void> {
    for (let segment = segmentOf(from_seq); segment <= segmentOf(to_seq); segment += 1) {
      await fsyncFile(this.segmentPath(segment));
    }
  }

  /** Reads the given (acknowledged) seqs, in the order given, opening only the segments they fall in. */
  async read(seqs: number[]): Promise<AgentEvent[]> {
    const segmentLines = new Map<number, string[]>();
    for (const seq of seqs) {
      const segment = segmentOf(seq);
      if (!segmentLines.has(segment)) segmentLines.set(segment, await this.readSegmentLines(segment));
    }
    return seqs.map((seq) => {
      const segment = segmentOf(seq);
      const line = segmentLines.get(segment)?.[seq - segment * SEGMENT_SIZE - 1];
      if (line === undefined || line.length === 0) throw this.corrupt(`event ${seq} is missing`);
      let event: AgentEvent;
      try {
        event = AgentEvent.parse(JSON.parse(line));
      } catch {
        throw this.corrupt(`event ${seq} is not a valid event line`);
      }
      if (event.event_seq !== seq) throw this.corrupt(`line of event ${seq} holds event ${event.event_seq}`);
      return event;
    });
  }

  private async readSegmentLines(segment: number): Promise<string[]> {
    try {
      return (await readFile(this.segmentPath(segment), 'utf8')).split('\n');
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  private async cutAfter(segment: number, last_event_seq: number): Promise<void> {
    const path = this.segmentPath(segment);
    const bytes = await readFile(path);
    const keep = last_event_seq - segment * SEGMENT_SIZE;
    let start = 0;
    let end = 0;
    for (let i = 0; i < keep; i += 1) {
      const newline = bytes.indexOf(10, end);
      if (newline === -1) throw this.corrupt(`segment ${segmentFileName(segment)} ends before event ${last_event_seq}`);
      start = end;
      end = newline + 1;
    }
    if (readSeq(bytes.subarray(start, end - 1).toString('utf8')) !== last_event_seq) {
      throw this.corrupt(`segment ${segmentFileName(segment)} does not end its acknowledged part with event ${last_event_seq}`);
    }
    if (end < bytes.length) await this.truncateSegment(path, end);
  }

  private async truncateSegment(path: string, length: number): Promise<void> {
    this.handles.close(path);
    await truncate(path, length);
    await fsyncFile(path);
  }

  /** Deletes the segments that hold only events past `last_event_seq`; returns the others, ascending. */
  private async removeSegmentsPast(last_event_seq: number): Promise<number[]> {
    const lastSegment = last_event_seq > 0 ? segmentOf(last_event_seq) : -1;
    const kept: number[] = [];
    let removed = false;
    for (const segment of await this.listSegments()) {
      if (segment <= lastSegment) {
        kept.push(segment);
        continue;
      }
      const path = this.segmentPath(segment);
      this.handles.close(path);
      await rm(path, { force: true });
      removed = true;
    }
    if (removed) await this.directories.sync(this.dir);
    return kept;
  }

  private async listSegments(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    return names
      .map((name) => SEGMENT_NAME.exec(name)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  private segmentPath(segment: number): string {
    return join(this.dir, segmentFileName(segment));
  }

  private corrupt(what: string): DomainError {
    return new DomainError('store_unavailable', `event log of agent ${this.agent_id} is damaged: ${what}`, {
      agent_id: this.agent_id,
    });
  }
}

function readSeq(line: string): number | null {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && 'event_seq' in parsed && typeof parsed.event_seq === 'number') {
      return parsed.event_seq;
    }
  } catch {
    // Not JSON: the caller reports the damage.
  }
  return null;
}
