#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './http/app.js';
import { isHeapGrowthPercent, limitHeapGrowth } from './runtime/heap-growth.js';
import { inspectLog } from './runtime/inspect-log.js';
import { Runtime } from './runtime/runtime.js';
import { MIGRATE_DRY_RUN_USAGE, migrateDryRunCommand, REPLAY_HELP, REPLAY_USAGE, replayCommand } from './replay/commands.js';
import { createStore } from './store/index.js';
import { parseConnectionUrl } from './store/postgres/connection.js';

const USAGE = `usage: holon-xstate serve [options]
       holon-xstate migrate --data-dir <dir> [--agent <id>]
       holon-xstate ${MIGRATE_DRY_RUN_USAGE}
       holon-xstate ${REPLAY_USAGE}

serve:

  --data-dir <dir>   data directory (default ./data)
  --store <url>      keep agents in PostgreSQL instead of lowdb in --data-dir (or env
                     HOLON_DATABASE_URL): postgres://user:password@host:port/database, or
                     postgres://user@/database?host=/run/postgresql over a unix socket
  --port <n>         TCP port, 0 = any free port (default 8080)
  --host <addr>      bind address (default 127.0.0.1; ignored in local mode)
  --token <secret>   control token (or env HOLON_TOKEN); without one: local mode, 127.0.0.1 only
  --node-id <id>     lease holder name (default node-<pid>)
  --log-level <lvl>  fatal|error|warn|info|debug|trace|silent (default info)
  --inspect-log <f>  append every XState inspection event as JSONL to <f> (offline replay)
  --heap-growth <p>  let V8's heap grow to only 1 + p/100 times its live data between full
                     collections (default: V8's own, up to 4x): less memory after bursts, more
                     collection time (see README)

migrate: rewrites intact snapshots of another schema version at the current one, so an agent
  whose wake was refused (snapshot_incompatible) can become Active again. Run it with the server
  stopped (it takes the data directory's write lease).
  --data-dir <dir>   data directory (default ./data)
  --agent <id>       only this agent (default: every agent)

${REPLAY_HELP}`;

const LOCAL_HOST = '127.0.0.1';

interface ServeConfig {
  dataDir: string;
  /** `--store` or HOLON_DATABASE_URL: a PostgreSQL URL; undefined keeps lowdb in dataDir. */
  storeUrl: string | undefined;
  port: number;
  host: string;
  token: string | undefined;
  nodeId: string | undefined;
  logLevel: string;
  inspectLog: string | undefined;
  /** `--heap-growth`, percent; undefined keeps V8's own growth. */
  heapGrowth: number | undefined;
  /** Set when local mode overrode a requested --host. */
  ignoredHost: string | undefined;
}

function parseServeArgs(args: string[], env: NodeJS.ProcessEnv): ServeConfig {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      'data-dir': { type: 'string', default: './data' },
      store: { type: 'string' },
      port: { type: 'string', default: '8080' },
      host: { type: 'string' },
      token: { type: 'string' },
      'node-id': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'inspect-log': { type: 'string' },
      'heap-growth': { type: 'string' },
    },
  });
  const storeUrl = values.store ?? (env['HOLON_DATABASE_URL'] || undefined);
  // A malformed URL is a usage error, before anything connects (the message never echoes a password).
  if (storeUrl !== undefined) parseConnectionUrl(storeUrl);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`invalid --port ${values.port}`);
  const heapGrowth = values['heap-growth'] === undefined ? undefined : Number(values['heap-growth']);
  if (heapGrowth !== undefined && !isHeapGrowthPercent(heapGrowth)) throw new Error(`invalid --heap-growth ${values['heap-growth']}: a positive whole percent`);
  const token = values.token ?? (env['HOLON_TOKEN'] || undefined);
  if (token !== undefined && token.trim() === '') throw new Error('the control token must not be blank');
  // Without a token nothing authenticates /api/*, so only this machine may reach it.
  const requestedHost = values.host;
  const host = token === undefined ? LOCAL_HOST : (requestedHost ?? LOCAL_HOST);
  return {
    dataDir: resolve(values['data-dir']),
    storeUrl,
    port,
    host,
    token,
    nodeId: values['node-id'],
    logLevel: values['log-level'],
    inspectLog: values['inspect-log'] ? resolve(values['inspect-log']) : undefined,
    heapGrowth,
    ignoredHost: token === undefined && requestedHost !== undefined && requestedHost !== LOCAL_HOST ? requestedHost : undefined,
  };
}

async function serve(config: ServeConfig): Promise<void> {
  if (config.heapGrowth !== undefined) limitHeapGrowth(config.heapGrowth);
  const recorder = config.inspectLog ? inspectLog(config.inspectLog) : null;
  const store = config.storeUrl === undefined ? undefined : createStore({ kind: 'postgres', url: config.storeUrl });
  const runtime = await Runtime.open({
    dataDir: config.dataDir,
    ...(store === undefined ? {} : { store }),
    // After a crash the old lease is still unexpired: wait it out instead of failing.
    leaseWaitMs: 12_000,
    ...(config.nodeId ? { nodeId: config.nodeId } : {}),
    ...(recorder ? { inspect: recorder.inspect } : {}),
  });
  const app = await buildApp({
    runtime,
    auth: config.token === undefined ? {} : { token: config.token },
    logger: { level: config.logLevel },
    identity: { node_id: runtime.nodeId, store: runtime.storeKind, started_at: runtime.startedAt },
  });

  closeWithGrace({ delay: 10_000, logger: { error: (...args: unknown[]) => console.error(...args) } }, async ({ signal, err }) => {
    if (err) console.error('holon-xstate: fatal error, shutting down:', err);
    else console.log(`holon-xstate: ${signal ?? 'shutdown'} received, closing`);
    // app.close(): stop accepting, end SSE streams and long polls (preClose), finish in-flight requests.
    await app.close();
    await runtime.close();
    await recorder?.close();
    console.log('holon-xstate: closed');
  });

  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await runtime.close();
    throw error;
  }
  if (config.ignoredHost !== undefined) {
    console.log(`holon-xstate: local mode (no token): ignoring --host ${config.ignoredHost}, binding ${LOCAL_HOST} only`);
  }
  console.log(`holon-xstate listening on ${address}`);
  console.log(
    config.token === undefined
      ? `auth: local (no control token; bound to ${LOCAL_HOST} only)`
      : 'auth: bearer (Authorization: Bearer <token> required on /api/*)',
  );
  console.log(`data dir: ${config.dataDir}`);
  if (store !== undefined) console.log(`store: ${store.location}`);
  console.log(`node id: ${runtime.nodeId}`);
  if (config.inspectLog) console.log(`inspection log: ${config.inspectLog}`);
  if (config.heapGrowth !== undefined) console.log(`heap growth: ${config.heapGrowth}% over the live heap`);
}

async function migrate(args: string[]): Promise<void> {
  if (args.includes('--dry-run')) {
    process.exitCode = await migrateDryRunCommand(args);
    return;
  }
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: { 'data-dir': { type: 'string', default: './data' }, agent: { type: 'string' } },
  });
  const runtime = await Runtime.open({ dataDir: resolve(values['data-dir']), leaseWaitMs: 12_000 });
  try {
    const ids: string[] = values.agent ? [values.agent] : [];
    for (let cursor: string | undefined, first = true; !values.agent && (first || cursor); first = false) {
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

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return;
  }
  if (command === 'migrate') {
    await migrate(rest);
    return;
  }
  if (command === 'replay') {
    process.exitCode = await replayCommand(rest);
    return;
  }
  if (command !== 'serve') {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  let config: ServeConfig;
  try {
    config = parseServeArgs(rest, process.env);
  } catch (error) {
    console.error(`holon-xstate: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  await serve(config);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`holon-xstate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
