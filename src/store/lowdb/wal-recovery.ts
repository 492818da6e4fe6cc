import { readdir, readFile } from 'node:fs/promises';
import { DomainError } from '../../domain/index.js';
import { once } from './lazy-text.js';
import type { AgentFiles, AgentWrite } from './agent-files.js';
import type { DirtyAgents } from './checkpoint.js';
import type { EventLine } from './event-log.js';
import { isNotFound } from './fs-util.js';
import { forEachLimited } from './limited.js';
import { applyFieldDelta } from '../shared/doc-json.js';
import { WalRecord } from './records.js';
import type { PersistedAgent } from './records.js';
import { RosterIndex } from './roster-index.js';
import type { IndexEntry } from './roster-index.js';
import type { UncheckpointedAgent } from './uncheckpointed.js';
import type { WriteAheadLog } from './write-ahead-log.js';

export interface RecoveredIndex {
  entries: Map<string, IndexEntry>;
  /** Agents whose files were repaired from the log: not yet fsynced, the next checkpoint covers them. */
  dirty: DirtyAgents;
  /** Agents whose files are known to end exactly at their `last_event_seq`. */
  repaired: Set<string>;
  /** Without `repair`: what the log holds that the agents' files may lack, to be read from memory. */
  uncheckpointed: Map<string, UncheckpointedAgent>;
  /** `roster.tsv` is missing (a data directory from before the index): the next checkpoint writes it. */
  rosterMissing: boolean;
}

export interface RecoveryOptions {
  rosterPath: string;
  files: AgentFiles;
  wal: WriteAheadLog;
  /**
   * This instance writes the directory: it repairs the agents' files from the log. Readers
   * (another instance may be writing) only build the index.
   */
  repair: boolean;
  /** No other process can be writing: torn log tails are cut. */
  cutTornTails: boolean;
}

const REPAIRS_IN_FLIGHT = 16;

/**
 * Rebuilds the roster index: `roster.tsv` (the last checkpoint), then every record of the
 * write-ahead log on top of it. A record only counts when it is newer than what the index holds,
 * so replaying a log twice, or a log a checkpoint already covered, changes nothing.
 */
export async function recoverIndex(options: RecoveryOptions): Promise<RecoveredIndex> {
  const { files } = options;
  let entries: Map<string, IndexEntry>;
  let rosterMissing = false;
  try {
    entries = RosterIndex.parse(await readFile(options.rosterPath, 'utf8'), options.rosterPath);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    rosterMissing = true;
    entries = await scanDocs(files);
  }

  const byAgent = new Map<string, WalRecord[]>();
  for (const payload of await options.wal.readAll(options.cutTornTails)) {
    const record = WalRecord.parse(JSON.parse(payload));
    const records = byAgent.get(record.a);
    if (records === undefined) byAgent.set(record.a, [record]);
    else records.push(record);
  }

  const dirty: DirtyAgents = new Map();
  const repaired = new Set<string>();
  const uncheckpointed = new Map<string, UncheckpointedAgent>();
  // What the last checkpoint made durable, before the log is laid over it (doc.json alone proves nothing).
  const checkpointed = new Map([...byAgent.keys()].map((agent_id) => [agent_id, rosterMissing ? 0 : (entries.get(agent_id)?.last_event_seq ?? 0)]));
  for (const [agent_id, records] of byAgent) {
    records.sort((a, b) => a.v - b.v);
    const latest = records.at(-1) as WalRecord;
    if (latest.v > (entries.get(agent_id)?.version ?? 0)) {
      entries.set(agent_id, {
        version: latest.v,
        last_event_seq: latest.s,
        rosterJson: latest.r === undefined ? undefined : JSON.stringify(latest.r),
      });
    }
  }
  if (options.repair) {
    await forEachLimited([...byAgent], REPAIRS_IN_FLIGHT, async ([agent_id, records]) => {
      const entry = entries.get(agent_id) as IndexEntry;
      dirty.set(agent_id, await repairAgent(files, agent_id, entry, records, checkpointed.get(agent_id) ?? 0));
      repaired.add(agent_id);
    });
  } else {
    await forEachLimited([...byAgent], REPAIRS_IN_FLIGHT, async ([agent_id, records]) => {
      const logged = await loggedState(files, agent_id, entries.get(agent_id) as IndexEntry, records);
      if (logged !== null) uncheckpointed.set(agent_id, logged);
    });
  }
  return { entries, dirty, repaired, rosterMissing, uncheckpointed };
}

/**
 * The agent's state as its newest record gives it, with the events the records hold densely up to
 * it; `null` when a checkpoint already covered the record (the files are newer). Files hold every
 * event before the first one returned: a round writes them before it deletes their log files.
 */
async function loggedState(files: AgentFiles, agent_id: string, entry: IndexEntry, records: WalRecord[]): Promise<UncheckpointedAgent | null> {
  const latest = records.at(-1) as WalRecord;
  if (latest.v !== entry.version) return null;
  const onDisk = needsBase(records) ? await files.readDoc(agent_id) : null;
  const bySeq = eventsBySeq(records);
  let first = entry.last_event_seq + 1;
  while (bySeq.has(first - 1)) first -= 1;
  const lines: EventLine[] = [];
  for (let seq = first; seq <= entry.last_event_seq; seq += 1) lines.push({ event_seq: seq, line: JSON.stringify(bySeq.get(seq)) });
  return { write: latestWrite(entry, replayDoc(agent_id, records, onDisk)), lines };
}

/**
 * Makes an agent's files match its index entry, using its log records: events the segments lack
 * are appended, a torn or unacknowledged tail is cut, an older (or torn) doc.json is rewritten.
 * Returns the first `event_seq` that is not known to be fsynced.
 */
async function repairAgent(files: AgentFiles, agent_id: string, entry: IndexEntry, records: WalRecord[], checkpointed: number): Promise<number> {
  const log = files.eventLog(agent_id);
  const have = await log.recoverPrefix(entry.last_event_seq, checkpointed);
  const lines: EventLine[] = [];
  const bySeq = eventsBySeq(records);
  for (let seq = have + 1; seq <= entry.last_event_seq; seq += 1) {
    const event = bySeq.get(seq);
    if (event === undefined) {
      throw new DomainError('store_unavailable', `agent ${agent_id}: event ${seq} is neither in its log nor in the write-ahead log`);
    }
    lines.push({ event_seq: seq, line: JSON.stringify(event) });
  }
  const latest = records.at(-1) as WalRecord;
  const onDisk = await files.readDoc(agent_id).catch(() => null);
  if (latest.v === entry.version && (onDisk === null || onDisk.version < entry.version)) {
    await files.writeState(agent_id, latestWrite(entry, replayDoc(agent_id, records, onDisk)), lines);
  } else if (lines.length > 0) {
    log.append(lines);
  }
  // Records are sorted by version, so the first event of the first record with events is the oldest.
  const firstLogged = records.find((record) => record.e.length > 0)?.e[0]?.event_seq ?? have + 1;
  return Math.min(firstLogged, have + 1);
}

/** Every event the records hold, by `event_seq`. */
function eventsBySeq(records: WalRecord[]): Map<number, WalRecord['e'][number]> {
  return new Map(records.flatMap((record) => record.e.map((event) => [event.event_seq, event] as const)));
}

/** The agent's state as its index entry and the document of its newest record give it. */
function latestWrite(entry: IndexEntry, doc: unknown): AgentWrite {
  return { version: entry.version, last_event_seq: entry.last_event_seq, docJson: once(() => JSON.stringify(doc ?? null)), rosterJson: entry.rosterJson };
}

/** Whether the records' newest document is built on doc.json: no whole document precedes its patches. */
function needsBase(records: WalRecord[]): boolean {
  return records.at(-1)?.p !== undefined && !records.some((record) => record.p === undefined);
}

/**
 * The document as of the newest record (records sorted by version): the newest whole document
 * (`d`), or doc.json when the log holds none, with each later patch laid over it in order.
 * Patches at or below the base's version are already in it; a gap means the base is missing.
 */
function replayDoc(agent_id: string, records: WalRecord[], onDisk: PersistedAgent | null): unknown {
  let from = records.length - 1;
  while (from >= 0 && (records[from] as WalRecord).p !== undefined) from -= 1;
  let base: { version: number; doc: unknown };
  if (from >= 0) {
    const whole = records[from] as WalRecord;
    base = { version: whole.v, doc: whole.d ?? null };
  } else if (onDisk !== null) {
    base = { version: onDisk.version, doc: onDisk.doc };
  } else {
    throw new DomainError('store_unavailable', `agent ${agent_id}: its write-ahead log records are changes to a doc.json that is missing`);
  }
  for (const record of records.slice(from + 1)) {
    if (record.v <= base.version) continue;
    if (record.v !== base.version + 1 || typeof base.doc !== 'object' || base.doc === null) {
      throw new DomainError('store_unavailable', `agent ${agent_id}: version ${record.v} changes version ${record.v - 1}, but the base found is version ${base.version}`);
    }
    const previous = base.doc as Record<string, unknown>;
    const doc: Record<string, unknown> = { ...previous, ...record.p };
    for (const [field, delta] of Object.entries(record.q ?? {})) {
      try {
        doc[field] = applyFieldDelta(previous[field], delta);
      } catch (err) {
        throw new DomainError('store_unavailable', `agent ${agent_id}: version ${record.v} changes field ${field} of version ${base.version}, which does not match: ${String(err)}`);
      }
    }
    base = { version: record.v, doc };
  }
  return base.doc;
}

/** Builds the index from every doc.json: a data directory written before `roster.tsv` existed. */
async function scanDocs(files: AgentFiles): Promise<Map<string, IndexEntry>> {
  let names: string[];
  try {
    names = (await readdir(files.agentsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (err) {
    if (isNotFound(err)) return new Map();
    throw err;
  }
  const entries = new Map<string, IndexEntry>();
  await forEachLimited(names, REPAIRS_IN_FLIGHT, async (agent_id) => {
    const doc = await files.readDoc(agent_id);
    if (doc === null) return;
    entries.set(agent_id, {
      version: doc.version,
      last_event_seq: doc.last_event_seq,
      rosterJson: doc.roster === undefined ? undefined : JSON.stringify(doc.roster),
    });
  });
  return entries;
}
