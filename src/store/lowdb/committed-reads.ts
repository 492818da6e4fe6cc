import { AgentEvent, DomainError } from '../../domain/index.js';
import type { AgentFiles } from './agent-files.js';
import type { PersistedAgent } from './records.js';
import type { Uncheckpointed } from './uncheckpointed.js';

/**
 * Reads of an agent's acknowledged state: what a checkpoint has not written yet comes from
 * memory, the rest from its files. The store and the read-only view of a data directory share them.
 */

/** The agent's latest acknowledged document, or `null` when it has none in memory nor a doc.json. */
export async function committedDoc(files: AgentFiles, uncheckpointed: Uncheckpointed, agent_id: string): Promise<PersistedAgent | null> {
  const write = uncheckpointed.write(agent_id);
  if (write === undefined) return files.readDoc(agent_id);
  const roster: unknown = write.rosterJson === undefined ? undefined : JSON.parse(write.rosterJson);
  return { version: write.version, last_event_seq: write.last_event_seq, doc: JSON.parse(write.docJson()) as unknown, ...(roster === undefined ? {} : { roster }) };
}

/** The given acknowledged seqs, in the order given. */
export async function committedEvents(files: AgentFiles, uncheckpointed: Uncheckpointed, agent_id: string, seqs: number[]): Promise<AgentEvent[]> {
  // Taken before the files are read: a checkpoint drops them only once the files hold them.
  const lines = uncheckpointed.lines(agent_id);
  const firstInMemory = lines[0]?.event_seq ?? Number.POSITIVE_INFINITY;
  const fromFiles = await files.eventLog(agent_id).read(seqs.filter((seq) => seq < firstInMemory));
  let next = 0;
  return seqs.map((seq) => {
    if (seq < firstInMemory) return fromFiles[next++] as AgentEvent;
    const line = lines[seq - firstInMemory];
    if (line?.event_seq !== seq) throw new DomainError('store_unavailable', `agent ${agent_id}: event ${seq} is not in memory`);
    return AgentEvent.parse(JSON.parse(line.line));
  });
}
