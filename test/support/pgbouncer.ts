/**
 * PgBouncer for tests and benchmarks: Debian's `pgbouncer` (installed by .ci/run) started in a
 * temporary directory on 127.0.0.1 (a free port), in front of the test database, and stopped
 * and deleted by `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { PG_TEST_URL } from './postgres.js';

/** Where Debian installs it. */
export const PGBOUNCER_BINARY = '/usr/sbin/pgbouncer';

/** A running PgBouncer. */
export interface PgBouncer {
  /** The test database's URL, through the pooler. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** True when the binary is installed. */
export function pgbouncerInstalled(): boolean {
  return existsSync(PGBOUNCER_BINARY);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts PgBouncer in `mode` in front of the test database's server. */
export async function startPgBouncer(
  mode: 'transaction' | 'session',
  settings: Record<string, string> = {},
): Promise<PgBouncer> {
  const target = new URL(PG_TEST_URL);
  const directory = mkdtempSync(join(tmpdir(), 'mr-pgbouncer-'));
  const port = await freePort();
  const asRoot = userInfo().uid === 0;
  // PgBouncer refuses to run as root: `-u` drops to postgres, which must read and write here.
  if (asRoot) chownSync(directory, ...uidOf('postgres'));
  writeFileSync(join(directory, 'users.txt'), `"${target.username || 'postgres'}" ""\n`);
  const config = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(directory, 'users.txt'),
    pool_mode: mode,
    logfile: join(directory, 'pgbouncer.log'),
    pidfile: join(directory, 'pgbouncer.pid'),
    max_client_conn: '200',
    default_pool_size: '20',
    ...settings,
  };
  writeFileSync(
    join(directory, 'pgbouncer.ini'),
    `[databases]\n* = host=${target.hostname} port=${target.port || '5432'}\n\n[pgbouncer]\n${Object.entries(
      config,
    )
      .map(([key, value]) => `${key} = ${value}`)
      .join('\n')}\n`,
  );
  const child: ChildProcess = spawn(
    PGBOUNCER_BINARY,
    [...(asRoot ? ['-u', 'postgres'] : []), join(directory, 'pgbouncer.ini')],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(directory, { recursive: true, force: true });
  };
  for (let attempt = 0; attempt < 100 && !(await accepting(port)); attempt += 1) {
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!(await accepting(port))) {
    await stop();
    throw new Error(`PgBouncer did not start on 127.0.0.1:${port}`);
  }
  const url = new URL(PG_TEST_URL);
  url.port = String(port);
  return { url: url.toString(), port, stop };
}

function uidOf(user: string): [number, number] {
  // /etc/passwd: name:x:uid:gid:...
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${user}:`));
  if (line === undefined) throw new Error(`no user '${user}' to run PgBouncer as`);
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}
