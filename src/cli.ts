#!/usr/bin/env node
import { resolve } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { commandUsage, parseCommandLine, programUsage, UsageError, type CommandSpec, type OptionSpec, type ParsedOptions } from './cli/options.js';
import { startedByNpm, watchParent } from './cli/parent-watch.js';
import { buildApp } from './http/app.js';
import { createLogger, LOG_FORMATS, type LogFormat } from './http/logging.js';
import { isHeapGrowthPercent, limitHeapGrowth } from './cli/heap-growth.js';
import { inspectLog } from './cli/inspect-log.js';
import { Runtime } from './runtime/runtime.js';
import { MIGRATE_DRY_RUN_OPTIONS, REPLAY_COMMAND, runMigrateDryRun, runReplay } from './replay/commands.js';
import { DomainError } from './domain/index.js';
import { createStore } from './store/index.js';
import { parseConnectionUrl } from './store/postgres/connection.js';
import { assertAdvertiseUrl } from './store/shared/node-rules.js';

const LOCAL_HOST = '127.0.0.1';
/** After a crash the old lease is still unexpired (TTL 10 s): wait it out instead of failing. */
const LEASE_WAIT_MS = 12_000;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Every command that opens a data directory takes this option. */
const DATA_DIR: OptionSpec = { type: 'string', value: '<dir>', default: './data', description: 'data directory' };

/** How long a stopping `serve` lets in-flight requests finish before it closes their connections. */
const CLOSE_CONNECTIONS_AFTER_MS = 5_000;

const leaseWaitNotice = (wait: { wait_ms: number; reason: string }): string =>
  `waiting up to ${Math.round(wait.wait_ms / 1000)} s for the previous holder's lease (${wait.reason})`;

// ---- serve --------------------------------------------------------------------------------

const SERVE: CommandSpec = {
  name: 'serve',
  summary: 'serve the HTTP control plane',
  description:
    'Serves the HTTP control plane (the API, its OpenAPI document at /openapi.json) on one data directory, ' +
    'of which it holds the write lease. SIGTERM or SIGINT closes it cleanly (streams ended, in-flight requests ' +
    'finished, lease released); so does the exit of the npm that started it.',
  options: {
    'data-dir': DATA_DIR,
    store: {
      type: 'string',
      value: '<url>',
      defaultText: 'env HOLON_DATABASE_URL; none = lowdb in --data-dir',
      description: 'keep agents in PostgreSQL: postgres://user:password@host:port/database, or postgres://user@/database?host=/run/postgresql over a unix socket',
    },
    port: { type: 'string', value: '<n>', default: '8080', description: 'TCP port; 0 = any free port' },
    host: { type: 'string', value: '<addr>', defaultText: LOCAL_HOST, description: 'bind address; ignored in local mode (no token), which binds 127.0.0.1 only' },
    token: { type: 'string', value: '<secret>', defaultText: 'env HOLON_TOKEN; none = local mode', description: 'control token: /api/* then needs Authorization: Bearer <secret>' },
    'node-id': { type: 'string', value: '<id>', defaultText: 'node-<pid>', description: 'lease holder name, shown in /handshake' },
    'advertise-url': {
      type: 'string',
      value: '<url>',
      defaultText: 'the address it listens on',
      description: "with --store: the http(s)://host:port other nodes reach this one at, kept in the database's nodes registry while it runs",
    },
    'log-level': { type: 'string', value: '<level>', default: 'info', description: `${LOG_LEVELS.join('|')}; info logs one line per request (startup and shutdown notices show at every level but silent)` },
    'log-format': { type: 'string', value: '<format>', defaultText: 'pretty on a terminal, json otherwise', description: 'json: one pino JSON record per line; pretty: one plain line per record' },
    'inspect-log': { type: 'string', value: '<file>', defaultText: 'none', description: 'append every XState inspection event as JSONL to <file> (offline replay)' },
    'heap-growth': {
      type: 'string',
      value: '<percent>',
      defaultText: "V8's own, up to 4x",
      description: "let V8's heap grow to only 1 + percent/100 times its live data between full collections: less memory after bursts, more collection time (see README)",
    },
    'inbox-max-messages': { type: 'string', value: '<n>', default: '1000', description: 'messages one agent may hold pending; beyond it an input gets 429 inbox_full (Retry-After)' },
    'inbox-max-bytes': { type: 'string', value: '<n>', default: '8388608', description: "bytes of body text one agent's pending messages may hold; beyond it 429 inbox_full" },
    'ingress-max-in-flight': { type: 'string', value: '<n>', default: '10000', description: 'inputs accepted and not yet durable, process-wide; beyond it 429 inbox_full' },
    'lease-ttl-ms': { type: 'string', value: '<ms>', default: '10000', description: "time to live of the write lease (with --store: of each agent lease and of the node's registration), renewed every third of it" },
    'exit-with-parent': { type: 'string', value: '<when>', default: 'auto', description: 'auto|yes|no: shut down when the process that started this one exits; auto = when started by npm or npx' },
  },
};

interface ServeConfig {
  dataDir: string;
  /** `--store` or HOLON_DATABASE_URL: a PostgreSQL URL; undefined keeps lowdb in dataDir. */
  storeUrl: string | undefined;
  port: number;
  host: string;
  token: string | undefined;
  nodeId: string | undefined;
  /** `--advertise-url`; undefined advertises the listening address. */
  advertiseUrl: string | undefined;
  logLevel: string;
  logFormat: LogFormat;
  inspectLog: string | undefined;
  /** `--heap-growth`, percent; undefined keeps V8's own growth. */
  heapGrowth: number | undefined;
  exitWithParent: boolean;
  /** `--inbox-max-messages`, `--inbox-max-bytes`, `--ingress-max-in-flight` (RuntimeOptions of the same names). */
  inbox: { inboxMaxMessages: number; inboxMaxBytes: number; ingressMaxInFlight: number };
  /** `--lease-ttl-ms`. */
  leaseTtlMs: number;
  /** Set when local mode overrode a requested --host. */
  ignoredHost: string | undefined;
}

function oneOf(name: string, value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value)) throw new UsageError(`invalid --${name} '${value}': one of ${allowed.join(', ')}`);
  return value;
}

/** A positive whole number option (its default applied by the parser). */
function positive(options: ParsedOptions, name: string): number {
  const text = options.string(name) ?? '';
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || !Number.isSafeInteger(value)) throw new UsageError(`invalid --${name} '${text}': a whole number ≥ 1`);
  return value;
}

function serveConfig(options: ParsedOptions, env: NodeJS.ProcessEnv): ServeConfig {
  const portText = options.string('port') ?? '8080';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65_535) throw new UsageError(`invalid --port '${portText}': a whole number 0-65535`);
  const heapText = options.string('heap-growth');
  const heapGrowth = heapText === undefined ? undefined : Number(heapText);
  if (heapGrowth !== undefined && !isHeapGrowthPercent(heapGrowth)) throw new UsageError(`invalid --heap-growth '${heapText}': a positive whole percent`);
  const token = options.string('token') ?? (env['HOLON_TOKEN'] || undefined);
  if (token !== undefined && token.trim() === '') throw new UsageError('the control token must not be blank');
  const logLevel = oneOf('log-level', options.string('log-level') ?? 'info', LOG_LEVELS);
  const logFormat = oneOf('log-format', options.string('log-format') ?? (process.stdout.isTTY ? 'pretty' : 'json'), LOG_FORMATS) as LogFormat;
  const exitWithParent = oneOf('exit-with-parent', options.string('exit-with-parent') ?? 'auto', ['auto', 'yes', 'no']);
  const storeUrl = options.string('store') ?? (env['HOLON_DATABASE_URL'] || undefined);
  // A malformed URL is a usage error, before anything connects (the message never echoes a password).
  if (storeUrl !== undefined) {
    try {
      parseConnectionUrl(storeUrl);
    } catch (error) {
      throw new UsageError(`invalid --store: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const advertiseUrl = options.string('advertise-url');
  if (advertiseUrl !== undefined) {
    try {
      assertAdvertiseUrl(advertiseUrl);
    } catch (error) {
      throw new UsageError(`invalid --advertise-url: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  // Without a token nothing authenticates /api/*, so only this machine may reach it.
  const requestedHost = options.string('host');
  const host = token === undefined ? LOCAL_HOST : (requestedHost ?? LOCAL_HOST);
  const inspect = options.string('inspect-log');
  return {
    dataDir: resolve(options.string('data-dir') ?? './data'),
    storeUrl,
    port,
    host,
    token,
    nodeId: options.string('node-id'),
    advertiseUrl,
    logLevel,
    logFormat,
    inspectLog: inspect ? resolve(inspect) : undefined,
    heapGrowth,
    leaseTtlMs: positive(options, 'lease-ttl-ms'),
    inbox: {
      inboxMaxMessages: positive(options, 'inbox-max-messages'),
      inboxMaxBytes: positive(options, 'inbox-max-bytes'),
      ingressMaxInFlight: positive(options, 'ingress-max-in-flight'),
    },
    exitWithParent: exitWithParent === 'yes' || (exitWithParent === 'auto' && startedByNpm(env)),
    ignoredHost: token === undefined && requestedHost !== undefined && requestedHost !== LOCAL_HOST ? requestedHost : undefined,
  };
}

async function serve(options: ParsedOptions): Promise<void> {
  const config = serveConfig(options, process.env);
  const logger: Logger = createLogger({ level: config.logLevel, format: config.logFormat });
  // Startup and shutdown notices show at every level (but silent): they are how an operator
  // learns the address, the mode and why the process stops.
  const notices = logger.child({}, { level: config.logLevel === 'silent' ? 'silent' : 'info' });
  if (config.heapGrowth !== undefined) limitHeapGrowth(config.heapGrowth);
  const recorder = config.inspectLog ? inspectLog(config.inspectLog) : null;
  const store = config.storeUrl === undefined ? undefined : createStore({ kind: 'postgres', url: config.storeUrl });
  const runtime = await Runtime.open({
    dataDir: config.dataDir,
    ...(store === undefined ? {} : { store }),
    leaseWaitMs: Math.max(LEASE_WAIT_MS, config.leaseTtlMs + 2_000),
    leaseTtlMs: config.leaseTtlMs,
    ...config.inbox,
    onLeaseWait: (wait) => notices.info(leaseWaitNotice(wait)),
    ...(config.nodeId ? { nodeId: config.nodeId } : {}),
    ...(recorder ? { inspect: recorder.inspect } : {}),
  }).catch((error: unknown) => {
    // A store that cannot be opened (unreachable, a refused password, a newer schema) is the
    // operator's to fix, and a write lease another live node kept past the wait is how a standby
    // node ends today: one line saying what and where, no stack; anything else keeps its stack.
    const expected = error instanceof DomainError && (error.code === 'store_unavailable' || error.code === 'lease_lost');
    const cause = expected ? error.details?.['cause'] : undefined;
    const fields = expected ? { code: error.code, ...(typeof cause === 'string' ? { cause } : {}) } : { err: error };
    const message = error instanceof Error ? error.message : String(error);
    // A store_unavailable message names the store itself.
    const named = error instanceof DomainError && error.code === 'store_unavailable';
    const what = named ? message : `cannot open ${store?.location ?? config.dataDir}: ${message}`;
    notices.fatal(fields, `holon-xstate: ${what}`);
    process.exit(1);
  });
  const app = await buildApp({
    runtime,
    auth: config.token === undefined ? {} : { token: config.token },
    logger,
    identity: { node_id: runtime.nodeId, store: runtime.storeKind, started_at: runtime.startedAt },
  });

  closeWithGrace({ delay: 10_000, logger: { error: (...args: unknown[]) => notices.error({ args }, 'shutdown did not finish in time') } }, async ({ signal, err }) => {
    if (err) notices.fatal({ err }, 'holon-xstate: fatal error, shutting down');
    else notices.info(`holon-xstate: ${signal ?? 'shutdown'} received, closing`);
    // app.close(): stop accepting, end SSE streams and long polls (preClose), finish in-flight requests.
    // In-flight requests get a few seconds; then whatever connection is still open is cut (the
    // other nodes of a cluster keep connections to this one alive: a request refused while closing
    // asks for its connection to close, and this bounds the rest).
    const cut = setTimeout(() => app.server.closeAllConnections(), CLOSE_CONNECTIONS_AFTER_MS);
    cut.unref();
    await app.close();
    clearTimeout(cut);
    await runtime.close();
    await recorder?.close();
    notices.info('holon-xstate: closed (lease released)');
  });

  if (config.ignoredHost !== undefined) {
    notices.info(`holon-xstate: local mode (no token): ignoring --host ${config.ignoredHost}, binding ${LOCAL_HOST} only`);
  }
  notices.info(
    config.token === undefined
      ? `auth: local (no control token; bound to ${LOCAL_HOST} only)`
      : 'auth: bearer (Authorization: Bearer <token> required on /api/*)',
  );
  notices.info(`data dir: ${config.dataDir}`);
  if (store !== undefined) notices.info(`store: ${store.location}`);
  notices.info(`node id: ${runtime.nodeId}`);
  if (config.inspectLog) notices.info(`inspection log: ${config.inspectLog}`);
  if (config.heapGrowth !== undefined) notices.info(`heap growth: ${config.heapGrowth}% over the live heap`);
  if (config.exitWithParent) {
    watchParent((launcher) => {
      notices.info(`holon-xstate: the process that started this one (pid ${launcher}) exited: shutting down`);
      process.kill(process.pid, 'SIGTERM');
    });
  }
  // The listening line comes last, once everything above is said. Fastify logs it at info; the
  // address is followed by a space, so `listening on (\S+)` finds it in a JSON line as in a plain one.
  const listening = (at: string): string => `holon-xstate listening on ${at} (pid ${process.pid})`;
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host, listenTextResolver: listening });
  } catch (error) {
    await runtime.close();
    notices.fatal({ err: error }, `holon-xstate: cannot listen on ${config.host}:${config.port}: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  if (store !== undefined) {
    // A cluster node: registered under this address, it renews its agent leases with its
    // heartbeat and claims the agents nobody runs (`runtime.close` gives them back and unregisters).
    const advertised = config.advertiseUrl ?? address;
    await runtime.joinCluster(advertised).catch((error: unknown) => {
      notices.fatal({ err: error }, `holon-xstate: cannot register this node: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    });
    notices.info(`advertise url: ${advertised}`);
  }
  if (!logger.isLevelEnabled('info')) notices.info(listening(address));
}

// ---- migrate ------------------------------------------------------------------------------

const MIGRATE: CommandSpec = {
  name: 'migrate',
  summary: 'rewrite snapshots of another schema version at the current one',
  description:
    'Rewrites intact snapshots of another schema version at the current one, so an agent whose wake was refused ' +
    '(snapshot_incompatible) can become Active again. Run it with the server stopped: it takes the data ' +
    "directory's write lease.",
  options: {
    'data-dir': DATA_DIR,
    agent: { type: 'string', value: '<id>', defaultText: 'every agent', description: 'only this agent' },
    ...MIGRATE_DRY_RUN_OPTIONS,
  },
};

async function migrate(options: ParsedOptions): Promise<void> {
  if (options.flag('dry-run')) return runMigrateDryRun(options);
  const agent = options.string('agent');
  const runtime = await Runtime.open({
    dataDir: resolve(options.string('data-dir') ?? './data'),
    leaseWaitMs: LEASE_WAIT_MS,
    onLeaseWait: (wait) => console.error(`holon-xstate: ${leaseWaitNotice(wait)}`),
  });
  try {
    const ids: string[] = agent ? [agent] : [];
    for (let cursor: string | undefined, first = true; !agent && (first || cursor); first = false) {
      const page = await runtime.listAgents({ limit: 512, ...(cursor ? { cursor } : {}) });
      ids.push(...page.items.map((a) => a.agent_id));
      cursor = page.next_cursor ?? undefined;
    }
    for (const id of ids) {
      const result = await runtime.migrate(id);
      console.log(`${id}: ${result.migrated} snapshot(s) migrated, ${result.skipped_corrupted} corrupted left for recovery`);
    }
  } finally {
    await runtime.close();
  }
}

// ---- the program --------------------------------------------------------------------------

interface Command {
  spec: CommandSpec;
  run: (options: ParsedOptions) => Promise<void>;
}

/** Every command, in the order the usage lists them: a new command is one more entry. */
const COMMANDS: readonly Command[] = [
  { spec: SERVE, run: serve },
  { spec: MIGRATE, run: migrate },
  { spec: { ...REPLAY_COMMAND, options: { 'data-dir': DATA_DIR, ...REPLAY_COMMAND.options } }, run: runReplay },
];

const PROGRAM_USAGE = programUsage(COMMANDS.map((command) => command.spec));

function usageFailure(message: string, usage: string): void {
  console.error(`holon-xstate: ${message}\n\n${usage}`);
  process.exitCode = 2;
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(PROGRAM_USAGE);
    return;
  }
  const command = COMMANDS.find((c) => c.spec.name === name);
  if (!command) {
    usageFailure(name === undefined ? 'no command given' : `unknown command '${name}'`, PROGRAM_USAGE);
    return;
  }
  const usage = commandUsage(command.spec);
  try {
    const parsed = parseCommandLine(command.spec, rest);
    if (parsed.help) console.log(usage);
    else await command.run(parsed.options);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    usageFailure(error.message, usage);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`holon-xstate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
