import pg from 'pg';
import type { CommittedRange } from '../store.js';
import type { ConnectionConfig } from './connection.js';
import { EVENTS_CHANNEL } from './schema.js';

/** How long a lost listening connection waits before it connects again. */
const RECONNECT_MS = 500;

/**
 * One `LISTEN` connection per store instance, listening from the store's open on (migration 4
 * announces every commit batch's events), so that a watcher sees every commit after `watch`. Announcements of this schema by other instances (another
 * `application_name`) become `CommittedRange`s; this instance's own are left out, since its node
 * publishes its own events as it commits them. A lost connection is made again after
 * `RECONNECT_MS`; what was announced meanwhile is not delivered (the global stream is live only).
 */
export class EventAnnouncements {
  private readonly listeners = new Set<(range: CommittedRange) => void>();
  private client: pg.Client | null = null;
  private closed = false;

  constructor(
    private readonly config: ConnectionConfig,
    /** This instance's `application_name`: announcements under it are its own. */
    private readonly self: string,
  ) {}

  /** Connects and listens; rejects when the database cannot be reached. */
  start(): Promise<void> {
    return this.connect(true);
  }

  watch(listener: (range: CommittedRange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    const client = this.client;
    this.client = null;
    if (client) void client.end().catch(() => undefined);
  }

  private async connect(first = false): Promise<void> {
    const client = new pg.Client({
      host: this.config.host,
      port: this.config.port,
      user: this.config.user,
      database: this.config.database,
      ...(this.config.password === undefined ? {} : { password: this.config.password }),
      application_name: `${this.self}/listen`,
      keepAlive: true,
    });
    this.client = client;
    const lost = (): void => {
      if (this.client !== client) return;
      this.client = null;
      void client.end().catch(() => undefined);
      if (this.closed) return;
      setTimeout(() => {
        if (this.client === null && !this.closed) void this.connect();
      }, RECONNECT_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      if (message.channel === EVENTS_CHANNEL && message.payload !== undefined) this.deliver(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      if (first) {
        this.client = null;
        await client.end().catch(() => undefined);
        throw err;
      }
      lost();
    }
  }

  /** `<schema> <application_name>` then `agent_id first_seq last_seq` lines (migration 4). */
  private deliver(payload: string): void {
    const lines = payload.split('\n');
    const head = lines[0] ?? '';
    const space = head.indexOf(' ');
    if (head.slice(0, space) !== this.config.schema || head.slice(space + 1) === this.self) return;
    for (const line of lines.slice(1)) {
      const [agent_id, first, last] = line.split(' ');
      const range = { agent_id: agent_id ?? '', first_seq: Number(first), last_seq: Number(last) };
      if (range.agent_id === '' || !Number.isSafeInteger(range.first_seq) || !Number.isSafeInteger(range.last_seq)) continue;
      for (const listener of this.listeners) listener(range);
    }
  }
}
