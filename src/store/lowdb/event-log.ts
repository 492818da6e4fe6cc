import { open, readdir, readFile, rm, truncate } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentEvent, DomainError } from '../../domain/index.js';
import type { AppendHandles } from './append-handles.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { isNotFound } from './fs-util.js';

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
 * segment, so their cost does not depend on the log's length. The log may hold a tail the
 * agent's doc.json has not acknowledged (a crash between append and doc write); `recover` cuts it.
 */
export class AgentEventLog {
  /** Segment numbers that exist on disk. */
  private readonly segments = new Set<number>();

  constructor(
    readonly dir: string,
    private readonly agent_id: string,
    private readonly handles: AppendHandles,
    private readonly directories: DirectorySyncer,
  ) {}

  /**
   * Makes the files end exactly after `last_event_seq`: deletes segments past it, truncates the
   * last one after its last acknowledged line (dropping unacknowledged events and a torn line).
   */
  async recover(last_event_seq: number): Promise<void> {
    this.segments.clear();
    const onDisk = await this.listSegments();
    const lastSegment = last_event_seq > 0 ? segmentOf(last_event_seq) : -1;
    let removed = false;
    for (const segment of onDisk) {
      if (segment > lastSegment) {
        const path = this.segmentPath(segment);
        await this.handles.close(path);
        await rm(path, { force: true });
        removed = true;
      } else {
        this.segments.add(segment);
      }
    }
    if (last_event_seq > 0) {
      if (!this.segments.has(lastSegment)) throw this.corrupt(`segment ${segmentFileName(lastSegment)} is missing`);
      await this.cutAfter(lastSegment, last_event_seq);
    }
    if (removed) await this.directories.sync(this.dir);
  }

  /** `oldest_seq` of the retained window: the first line of the first segment still on disk. */
  oldestSeq(newest_seq: number): number {
    if (newest_seq === 0 || this.segments.size === 0) return 0;
    return Math.min(...this.segments) * SEGMENT_SIZE + 1;
  }

  /** Appends consecutive events and fdatasyncs each touched segment (one write per segment). */
  async append(lines: EventLine[]): Promise<void> {
    const bySegment = new Map<number, string[]>();
    for (const { event_seq, line } of lines) {
      const segment = segmentOf(event_seq);
      const group = bySegment.get(segment);
      if (group === undefined) bySegment.set(segment, [line]);
      else group.push(line);
    }
    let created = false;
    for (const [segment, group] of bySegment) {
      const buffer = Buffer.from(`${group.join('\n')}\n`, 'utf8');
      await this.handles.use(this.segmentPath(segment), async (handle) => {
        await writeAll(handle, buffer);
        await handle.datasync();
      });
      if (!this.segments.has(segment)) {
        this.segments.add(segment);
        created = true;
      }
    }
    // A new segment's directory entry must be durable before doc.json acknowledges its events.
    if (created) await this.directories.sync(this.dir);
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
    if (end < bytes.length) {
      await this.handles.close(path);
      await truncate(path, end);
      const handle = await open(path, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
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

async function writeAll(handle: FileHandle, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset);
    offset += bytesWritten;
  }
}
