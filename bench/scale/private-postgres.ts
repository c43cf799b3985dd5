/**
 * A PostgreSQL cluster of the benchmark's own, in a temporary directory on 127.0.0.1 (a free
 * port), deleted by `stop()`. The shared test server carries the other engineers' tests, and
 * WAL positions, `pg_stat_wal` and backend CPU are per cluster: counted there, their traffic
 * would be ours. Same major version and defaults as the test server (fsync, synchronous_commit,
 * full_page_writes on, 128 MB shared buffers), autovacuum off (as the test server has it, and so
 * that nothing else writes WAL during a measurement), pg_stat_statements loaded (a second count
 * of the statements per event beside the client-side one).
 *
 * Needs Debian's PostgreSQL binaries (/usr/lib/postgresql/<version>/bin) and, as root, the
 * `postgres` user to run them (initdb refuses root). Returns null when they are missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** A running private cluster. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  port: number;
  /**
   * CPU time of the whole cluster so far, microseconds: the postmaster and every process it
   * started (backends, WAL writer, checkpointer). Differences across a phase are the database's
   * cost of it, WAL flushes included. Exited backends' time is lost: keep connections open.
   */
  cpuMicros(): number;
  /**
   * CPU time so far of each process of the cluster, microseconds by pid: a phase's cost is
   * `cpuSince(before)`, which also counts the backends that started during the phase and keeps
   * the time of the ones that outlived it when others exited (a pool closing idle connections
   * makes `cpuMicros()` differences drop, even below zero).
   */
  cpuByProcess(): Map<number, number>;
  /** Stops the server and deletes its directory. */
  stop(): void;
}

/** Scheduler run time of a process, microseconds (`schedstat`: nanoseconds); 0 once gone. */
export function schedMicros(pid: number | string): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
}

function clusterMicros(postmaster: number): number {
  let total = 0;
  for (const micros of clusterProcesses(postmaster).values()) total += micros;
  return total;
}

function clusterProcesses(postmaster: number): Map<number, number> {
  const processes = new Map([[postmaster, schedMicros(postmaster)]]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === postmaster) processes.set(Number(entry), schedMicros(entry));
    } catch {
      // gone between the listing and the read
    }
  }
  return processes;
}

/**
 * CPU microseconds of a cluster's processes since `before` (a `cpuByProcess()` read): each
 * process still there counts its growth, a new one all of its time; one that exited meanwhile
 * is lost (keep connections open across a phase).
 */
export function cpuSince(cluster: PrivatePostgres, before: Map<number, number>): number {
  let total = 0;
  for (const [pid, micros] of cluster.cpuByProcess()) total += micros - (before.get(pid) ?? 0);
  return total;
}

/** Debian's PostgreSQL binaries, newest version, or null. */
export function binDirectory(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join(root, version, 'bin');
    if (existsSync(join(bin, 'initdb'))) return bin;
  }
  return null;
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

/** Starts a private cluster; `settings` are extra `-c` options of the server. */
export async function startPrivatePostgres(
  settings: Record<string, string> = {},
): Promise<PrivatePostgres | null> {
  const bin = binDirectory();
  if (bin === null) return null;
  const asRoot = userInfo().uid === 0;
  const run = (command: string, args: string[]) => {
    const [file, argv] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', join(bin, command), ...args]]
      : [join(bin, command), args];
    return execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  };
  const directory = mkdtempSync(join(tmpdir(), 'mr-bench-pg-'));
  const data = join(directory, 'data');
  if (asRoot) execFileSync('chown', ['postgres:postgres', directory]);
  const port = await freePort();
  const options = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: directory,
    shared_preload_libraries: 'pg_stat_statements',
    autovacuum: 'off',
    max_connections: '200',
    ...settings,
  };
  const stop = () => {
    spawnSync(asRoot ? 'runuser' : join(bin, 'pg_ctl'), [
      ...(asRoot ? ['-u', 'postgres', '--', join(bin, 'pg_ctl')] : []),
      '-D',
      data,
      '-m',
      'fast',
      '-w',
      'stop',
    ]);
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const flags = Object.entries(options)
      .map(([key, value]) => `-c ${key}=${value}`)
      .join(' ');
    run('pg_ctl', ['-D', data, '-o', flags, '-l', join(directory, 'log'), '-w', 'start']);
  } catch (error) {
    stop();
    throw error;
  }
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    cpuMicros: () => clusterMicros(postmaster),
    cpuByProcess: () => clusterProcesses(postmaster),
    stop,
  };
}
