import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { AgentEvent, EventType } from '../../src/domain/index.js';
import { Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';

/** A fresh data directory under the system temp dir, removed by `cleanup`. */
export function tempDataDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'holon-rt-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function openRuntime(dir: string, options: RuntimeOptions = {}): Promise<Runtime> {
  return Runtime.open({ dataDir: dir, killGraceMs: 300, ...options });
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every event of an agent's durable log, oldest first. */
export async function allEvents(runtime: Runtime, agentId: string): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await runtime.eventsPage(agentId, { after_seq: after, limit: 512, order: 'asc' });
    out.push(...page.events);
    if (!page.has_newer || page.events.length === 0) return out;
    after = page.events.at(-1)?.event_seq ?? after;
  }
}

export async function eventsOfType(runtime: Runtime, agentId: string, type: EventType): Promise<AgentEvent[]> {
  return (await allEvents(runtime, agentId)).filter((e) => e.type === type);
}

/**
 * Ids of the messages that turns took and finished with (a turn takes several: at its start,
 * `turn_started.message_ids`, and at its safe points, `turn_interjected`); an aborted turn's do
 * not count.
 */
export async function processedMessageIds(runtime: Runtime, agentId: string): Promise<Set<string>> {
  const events = await allEvents(runtime, agentId);
  const finished = new Set(
    events.filter((e) => e.type === 'turn_finished' && typeof e.payload['run_id'] === 'string' && e.payload['note'] === undefined && e.payload['terminal'] === undefined).map((e) => e.payload['run_id']),
  );
  const ids = new Set<string>();
  for (const e of events) {
    if ((e.type !== 'turn_started' && e.type !== 'turn_interjected') || !finished.has(e.payload['run_id'])) continue;
    for (const id of (e.payload['message_ids'] ?? [e.payload['message_id']]) as string[]) ids.add(id);
  }
  return ids;
}

/** Waits until the agent is asleep (its scheduler found nothing to do). */
export function untilAsleep(runtime: Runtime, agentId: string, timeoutMs = 10_000): Promise<true> {
  return eventually(async () => (await runtime.getSummary(agentId)).agent.status === 'asleep' || undefined, timeoutMs, `${agentId} asleep`);
}

/** One runtime per test on a fresh temp data dir; closed and removed after each test. */
export function runtimeSession(): { readonly dir: string; open(options?: RuntimeOptions): Promise<Runtime> } {
  let data: { dir: string; cleanup: () => void } | null = null;
  let runtime: Runtime | null = null;
  afterEach(async () => {
    await runtime?.close();
    runtime = null;
    data?.cleanup();
    data = null;
  });
  const session = {
    get dir(): string {
      data ??= tempDataDir();
      return data.dir;
    },
    /** Opens (again, after closing the previous one) on this test's data dir. */
    async open(options: RuntimeOptions = {}): Promise<Runtime> {
      await runtime?.close();
      runtime = await openRuntime(session.dir, options);
      return runtime;
    },
  };
  return session;
}
