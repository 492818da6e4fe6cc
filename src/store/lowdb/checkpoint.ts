import type { AgentFiles } from './agent-files.js';
import type { DirectorySyncer } from './directory-syncer.js';
import { replaceFileDurably } from './durable-json-file.js';
import { forEachLimited } from './limited.js';
import { syncFileSystem } from './sync-filesystem.js';
import { RosterIndex } from './roster-index.js';
import type { IndexEntry } from './roster-index.js';
import type { WriteAheadLog } from './write-ahead-log.js';

/** Agents written through since the last checkpoint: agent id → first `event_seq` written. */
export type DirtyAgents = Map<string, number>;

/** What one checkpoint round covers, captured between two commit batches. */
interface CheckpointCapture {
  /** Write-ahead log files every record of which is reflected in `entries` and the agents' files. */
  walFiles: string[];
  dirty: DirtyAgents;
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
 * Makes the written-through files of the dirty agents durable (one `syncfs` of the file system,
 * or, where that is unavailable, each file fsynced once per round), then writes `roster.tsv` from the captured index, then deletes the covered
 * write-ahead log files. A crash at any point leaves the log files, which recovery replays.
 */
export async function writeCheckpoint(capture: CheckpointCapture, targets: CheckpointTargets): Promise<void> {
  const { files, directories } = targets;
  if (capture.dirty.size > 0 && !(await syncFileSystem(files.agentsDir))) {
    await forEachLimited([...capture.dirty], SYNCS_IN_FLIGHT, async ([agent_id, from_seq]) => {
      const entry = capture.entries.get(agent_id);
      if (entry !== undefined) await files.sync(agent_id, from_seq, entry.last_event_seq);
    });
    await directories.sync(files.agentsDir);
  }
  await replaceFileDurably(targets.rosterPath, RosterIndex.serialize(capture.entries), directories);
  await targets.wal.retire(capture.walFiles);
}
