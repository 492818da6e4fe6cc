import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { chmodSync, chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL cluster of its own for a test run or a benchmark: `initdb` into a temp dir,
 * `postgres` listening on a unix socket in that dir (trust) and on a free loopback TCP port (every
 * login there needs a password, scram-sha-256), stopped and removed by `stop()`. initdb refuses
 * to run as root, so as root the cluster
 * runs as the `postgres` user (Debian's package creates it) and the dir is handed to it.
 */
export interface ThrowawayCluster {
  /** The temp dir holding everything (removed by `stop`). */
  root: string;
  /** The directory holding the socket: `host` for the drivers (`postgres://user@/db?host=<dir>`). */
  socketDir: string;
  /** Superuser (trust auth over the socket). */
  user: string;
  /** A role that must log in with `PASSWORD_ROLE.password` (scram): for the wrong-password tests. */
  passwordRole: { user: string; password: string };
  /** The loopback TCP port (127.0.0.1): every login there needs a password (scram). */
  tcpPort: number;
  /** Where the server logs (every refused login is a line there). */
  logPath: string;
  dataDir: string;
  pid: number;
  /** `postgres://user@/database?host=socketDir`; a password only when given. */
  url(database: string, user?: string, password?: string): string;
  /** `postgres://user:password@127.0.0.1:tcpPort/database` (scram over loopback TCP). */
  tcpUrl(database: string, user: string, password: string): string;
  stop(): void;
}

/** The bin directory of the newest installed PostgreSQL, or `null`. `HOLON_PG_BIN` overrides. */
export function findPostgresBin(): string | null {
  const override = process.env['HOLON_PG_BIN'];
  if (override) return existsSync(join(override, 'initdb')) ? override : null;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const found = which.status === 0 ? which.stdout.trim() : '';
  return found === '' ? null : join(found, '..');
}

export const POSTGRES_MISSING =
  'PostgreSQL is not installed: the PostgreSQL store suites need initdb and postgres ' +
  '(Debian: apt-get install postgresql; or set HOLON_PG_BIN to the directory holding them). ' +
  'Set HOLON_SKIP_PG=1 to skip them knowingly.';

interface RunAs {
  uid: number;
  gid: number;
}

/** As root: the `postgres` user's ids (initdb refuses root); otherwise run as ourselves. */
function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (line === undefined) throw new Error('running as root, but there is no postgres user to run initdb as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function chownTo(path: string, as: RunAs): void {
  chownSync(path, as.uid, as.gid);
}

function run(bin: string, args: string[], as: RunAs | undefined): void {
  const result = spawnSync(bin, args, { encoding: 'utf8', ...(as ?? {}), env: { ...process.env, LC_ALL: 'C' } });
  if (result.status !== 0) {
    throw new Error(`${bin} ${args.join(' ')} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
  }
}

const PASSWORD_ROLE = { user: 'holon_pw', password: 'right-password' };

/** A loopback port free right now (the kernel's pick; the caller binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Starts a new cluster; resolves once it accepts connections. */
export async function startThrowawayCluster(bin = findPostgresBin()): Promise<ThrowawayCluster> {
  if (bin === null) throw new Error(POSTGRES_MISSING);
  const as = runAs();
  const root = mkdtempSync(join(tmpdir(), 'holon-pg-'));
  chmodSync(root, 0o755);
  const dataDir = join(root, 'data');
  const socketDir = root;
  if (as) chownTo(root, as);
  const user = 'postgres';
  run(join(bin, 'initdb'), ['-D', dataDir, '-U', user, '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], as);
  // The password role must authenticate (first matching line wins); everyone else is trusted on
  // the socket; over TCP every login needs a password (scram), so the superuser cannot log in there.
  const hba = join(dataDir, 'pg_hba.conf');
  writeFileSync(hba, `local all ${PASSWORD_ROLE.user} scram-sha-256\nlocal all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n`);
  if (as) chownTo(hba, as);

  // Logs go to a file, and the server is its own process group: it outlives the test worker
  // that started it (the run's teardown stops it) and never writes to a closed pipe.
  const logPath = join(root, 'postgres.log');
  const tcpPort = await freePort();
  const log = openSync(logPath, 'a');
  if (as) chownTo(logPath, as);
  const child = spawn(
    join(bin, 'postgres'),
    [
      '-D', dataDir,
      '-k', socketDir,
      '-c', 'listen_addresses=127.0.0.1',
      '-p', String(tcpPort),
      '-c', 'max_connections=300',
      '-c', 'shared_buffers=64MB',
      '-c', 'unix_socket_permissions=0777',
    ],
    { ...(as ?? {}), stdio: ['ignore', log, log], detached: true, env: { ...process.env, LC_ALL: 'C' } },
  );
  closeSync(log);
  child.unref();
  const logTail = (): string => readFileSync(logPath, 'utf8').slice(-4000);
  let exitedEarly: string | null = null;
  child.once('exit', (code, signal) => {
    exitedEarly = String(code ?? signal);
  });
  try {
    for (let i = 0; ; i += 1) {
      if (exitedEarly !== null) throw new Error(`postgres exited at start (${exitedEarly}): ${logTail()}`);
      if (i === 300) throw new Error(`postgres did not become ready in 30 s: ${logTail()}`);
      const probe = spawnSync(join(bin, 'pg_isready'), ['-h', socketDir, '-p', String(tcpPort), '-U', user, '-q'], { encoding: 'utf8' });
      if (probe.status === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  run(join(bin, 'psql'), ['-h', socketDir, '-p', String(tcpPort), '-U', user, '-d', 'postgres', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE ROLE ${PASSWORD_ROLE.user} LOGIN PASSWORD '${PASSWORD_ROLE.password}'`], undefined);

  const pid = child.pid ?? 0;
  return clusterAt({ root, socketDir, dataDir, pid, tcpPort });
}

/** What a started cluster is, as the run's shared file records it. */
export interface ClusterRecord {
  root: string;
  socketDir: string;
  dataDir: string;
  pid: number;
  tcpPort: number;
}

export function clusterAt({ root, socketDir, dataDir, pid, tcpPort }: ClusterRecord): ThrowawayCluster {
  const user = 'postgres';
  return {
    root,
    socketDir,
    user,
    passwordRole: PASSWORD_ROLE,
    tcpPort,
    logPath: join(root, 'postgres.log'),
    dataDir,
    pid,
    url(database, asUser = user, password) {
      const auth = password === undefined ? encodeURIComponent(asUser) : `${encodeURIComponent(asUser)}:${encodeURIComponent(password)}`;
      // The socket file's name carries the port: say it unless it is libpq's default.
      const port = tcpPort === 5432 ? '' : `&port=${tcpPort}`;
      return `postgres://${auth}@/${encodeURIComponent(database)}?host=${encodeURIComponent(socketDir)}${port}`;
    },
    tcpUrl(database, asUser, password) {
      return `postgres://${encodeURIComponent(asUser)}:${encodeURIComponent(password)}@127.0.0.1:${tcpPort}/${encodeURIComponent(database)}`;
    },
    stop() {
      stopCluster(pid, root);
    },
  };
}

/** SIGQUIT is postgres's immediate shutdown: nothing to keep, so no checkpoint to wait for. */
export function stopCluster(pid: number, root: string): void {
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    // already gone
  }
  for (let i = 0; i < 100; i += 1) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    spawnSync('sleep', ['0.05']);
  }
  rmSync(root, { recursive: true, force: true });
}
