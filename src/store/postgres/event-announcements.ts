import pg from 'pg';
import type { CommittedEventsWatch, CommittedRange } from '../store.js';
import type { ConnectionConfig } from './connection.js';
import { EVENTS_CHANNEL } from './schema.js';
import type { SqlQuery } from './sql-client.js';

/** How long a lost listening connection waits before it connects again. */
const RECONNECT_MS = 500;
/** How long a watcher row lives unless renewed (every third of it): a dead node's row lapses. */
const WATCHER_TTL_MS = 30_000;

/**
 * One `LISTEN` connection per store instance, listening from the store's open on; the other
 * instances announce their commit batches' events while this one (or another) watches (migrations
 * 4 and 7), so a watcher sees every commit that inserts its events after `ready`. Announcements of
 * this schema by other instances (another `application_name`) become `CommittedRange`s; this
 * instance's own are left out, since its node publishes its own events as it commits them. A lost
 * connection is made again after `RECONNECT_MS`; what was announced meanwhile is not delivered
 * (the global stream is live only).
 */
export class EventAnnouncements {
  private readonly listeners = new Set<(range: CommittedRange) => void>();
  private client: pg.Client | null = null;
  private closed = false;
  /** Resolves once this instance's watcher row is written; `null` while nobody watches. */
  private registered: Promise<void> | null = null;
  private renewal: NodeJS.Timeout | null = null;
  /** The watcher row's writes, one after the other (a delete never overtakes the upsert after it). */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: ConnectionConfig,
    /** This instance's `application_name`: announcements under it are its own. */
    private readonly self: string,
    private readonly sql: SqlQuery,
    /** The quoted schema name. */
    private readonly s: string,
  ) {}

  /** Connects and listens; rejects when the database cannot be reached. */
  start(): Promise<void> {
    return this.connect(true);
  }

  /**
   * Other instances announce their commits only while some instance watches (migration 7): the
   * first watcher writes this instance's `event_watchers` row, renewed while anyone watches and
   * deleted after the last stops. `ready` resolves once the row is written (also when the write
   * failed: the renewal tries again), so every commit whose events are inserted after it is announced.
   */
  watch(listener: (range: CommittedRange) => void): CommittedEventsWatch {
    this.listeners.add(listener);
    if (this.registered === null) {
      this.renewal = setInterval(() => void this.writeWatcher('renew'), WATCHER_TTL_MS / 3).unref();
      this.registered = this.writeWatcher('renew');
    }
    let stopped = false;
    return {
      ready: this.registered,
      stop: () => {
        if (stopped) return;
        stopped = true;
        this.listeners.delete(listener);
        if (this.listeners.size === 0) this.unwatch();
      },
    };
  }

  /** Stops listening and deletes the watcher row; resolves once that write is done (or failed). */
  close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    if (this.registered !== null) this.unwatch();
    const client = this.client;
    this.client = null;
    if (client) void client.end().catch(() => undefined);
    return this.writes;
  }

  private unwatch(): void {
    if (this.renewal !== null) clearInterval(this.renewal);
    this.renewal = null;
    this.registered = null;
    void this.writeWatcher('delete');
  }

  private writeWatcher(kind: 'renew' | 'delete'): Promise<void> {
    const write = (): Promise<unknown> =>
      kind === 'renew'
        ? this.sql.query(
            `INSERT INTO ${this.s}.event_watchers (watcher, expires_at) VALUES ($1, statement_timestamp() + $2 * interval '1 millisecond')
             ON CONFLICT (watcher) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
            [this.self, WATCHER_TTL_MS],
          )
        : this.sql.query(`DELETE FROM ${this.s}.event_watchers WHERE watcher = $1`, [this.self]);
    // A failed write changes nothing here: a renewal tries again, an undeleted row lapses.
    this.writes = this.writes.then(write).then(
      () => undefined,
      () => undefined,
    );
    return this.writes;
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
