import type { AgentFiles } from './agent-files.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { replaceFileDurably } from './durable-json-file.js';
import { forEachLimited } from './limited.js';
import { syncFileSystem } from './sync-filesystem.js';
import { RosterIndex } from './roster-index.js';
import type { IndexEntry } from './roster-index.js';
import type { UncheckpointedAgent } from './uncheckpointed.js';
import type { WriteAheadLog } from './write-ahead-log.js';

/** Agents whose files were written without fsync (by recovery): agent id → first `event_seq` written. */
export type DirtyAgents = Map<string, number>;

/** What one checkpoint round covers, captured between two commit batches. */
interface CheckpointCapture {
  /** Write-ahead log files every record of which is reflected in `entries` and the agents' files. */
  walFiles: string[];
  dirty: DirtyAgents;
  /** The commits acknowledged since the last round: their files are written now. */
  written: Map<string, UncheckpointedAgent>;
  entries: Map<string, IndexEntry>;
}

export interface CheckpointTargets {
  files: AgentFiles;
  directories: DirectorySyncer;
  rosterPath: string;
  wal: WriteAheadLog;
}

const SYNCS_IN_FLIGHT = 32;
/**
 * Few on purpose: file operations share libuv's thread pool (4 threads) with the commit path's log
 * append and fdatasync, which would otherwise queue behind the round's temp files and renames.
 */
const AGENTS_WRITTEN_IN_FLIGHT = 2;

/**
 * Writes the commits acknowledged since the last round to the agents' files (events appended,
 * doc.json replaced, once per agent, without fsync), makes them and the files recovery wrote
 * durable (one `syncfs` of the file system, or, where that is unavailable, each file fsynced once
 * per round), then writes `roster.tsv` from the captured index, then deletes the covered
 * write-ahead log files. A crash at any point leaves the log files, which recovery replays.
 */
export async function writeCheckpoint(capture: CheckpointCapture, targets: CheckpointTargets): Promise<void> {
  const { files, directories } = targets;
  await forEachLimited([...capture.written], AGENTS_WRITTEN_IN_FLIGHT, ([agent_id, { write, lines }]) =>
    files.writeState(agent_id, write, lines),
  );
  const dirty = new Map(capture.dirty);
  for (const [agent_id, { write, lines }] of capture.written) {
    const from = lines[0]?.event_seq ?? write.last_event_seq + 1;
    dirty.set(agent_id, Math.min(from, dirty.get(agent_id) ?? from));
  }
  if (dirty.size > 0 && !(await syncFileSystem(files.agentsDir))) {
    await forEachLimited([...dirty], SYNCS_IN_FLIGHT, async ([agent_id, from_seq]) => {
      const entry = capture.entries.get(agent_id);
      if (entry !== undefined) await files.sync(agent_id, from_seq, entry.last_event_seq);
    });
    await directories.sync(files.agentsDir);
  }
  await replaceFileDurably(targets.rosterPath, RosterIndex.serialize(capture.entries), directories);
  await targets.wal.retire(capture.walFiles);
}
