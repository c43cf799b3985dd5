/**
 * What the comparison benchmarks count on a private cluster (private-postgres.ts) around a
 * phase: statements executed per database (pg_stat_statements' calls: a statement is a round
 * trip unless the client pipelines), transaction ids assigned (every writing transaction takes
 * one: the commits that wrote), WAL bytes (pg_current_wal_lsn), and rows by table
 * (pg_stat_user_tables, flushed by a backend when it ends or after up to 10 s idle: read them
 * with the servers stopped).
 */
import { readdirSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { readyLine } from '../ready-line.js';
import { schedMicros } from './private-postgres.js';

/** A snapshot of the counters, for differences across a phase. */
export interface Counters {
  statements: Map<string, number>;
  xids: bigint;
  wal: bigint;
}

/** Database URL of `database` on the cluster at `base` (a URL of its `postgres` database). */
export function databaseUrl(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Reads the counters through `admin` (connected to the cluster's `postgres` database). */
export async function readCounters(admin: pg.Client): Promise<Counters> {
  const { rows } = await admin.query<{ datname: string; calls: string }>(
    `SELECT d.datname, sum(s.calls)::text AS calls FROM pg_stat_statements s
     JOIN pg_database d ON d.oid = s.dbid GROUP BY d.datname`,
  );
  const position = await admin.query<{ xids: string; wal: string }>(
    `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xids,
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal`,
  );
  return {
    statements: new Map(rows.map((row) => [row.datname, Number(row.calls)])),
    xids: BigInt(position.rows[0]!.xids),
    wal: BigInt(position.rows[0]!.wal.split('.')[0]!),
  };
}

/** Statements run in `database`, transaction ids and WAL bytes of the cluster, between two reads. */
export function difference(before: Counters, after: Counters, database: string) {
  return {
    statements: (after.statements.get(database) ?? 0) - (before.statements.get(database) ?? 0),
    xids: Number(after.xids - before.xids),
    walBytes: Number(after.wal - before.wal),
  };
}

/** Statements of `database` by text, calls each (pg_stat_statements), most frequent first. */
export async function statementsOf(
  admin: pg.Client,
  database: string,
): Promise<{ query: string; calls: number }[]> {
  const { rows } = await admin.query<{ query: string; calls: string }>(
    `SELECT s.query, s.calls::text AS calls FROM pg_stat_statements s
     JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY s.calls DESC`,
    [database],
  );
  return rows.map((row) => ({
    query: row.query.replace(/\s+/g, ' ').trim(),
    calls: Number(row.calls),
  }));
}

/** Inserted, updated and deleted rows by table of `url`'s database. */
export async function tableRows(url: string): Promise<Map<string, number[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; ins: string; upd: string; del: string }>(
      `SELECT schemaname || '.' || relname AS name, n_tup_ins::text AS ins,
         n_tup_upd::text AS upd, n_tup_del::text AS del FROM pg_stat_user_tables`,
    );
    return new Map(rows.map((row) => [row.name, [row.ins, row.upd, row.del].map(Number)]));
  } finally {
    await client.end();
  }
}

/** Rows per event by table between two `tableRows` reads: `table inserted/updated/deleted`. */
export function rowsPerEvent(
  before: Map<string, number[]>,
  after: Map<string, number[]>,
  events: number,
  tables: (name: string) => boolean = () => true,
): string[] {
  const lines: string[] = [];
  for (const [table, figures] of [...after].sort()) {
    if (!tables(table)) continue;
    const was = before.get(table) ?? [0, 0, 0];
    const per = figures.map((value, index) => (value - was[index]!) / events);
    if (per.every((value) => value === 0)) continue;
    lines.push(`${table} ${per.map((value) => value.toFixed(2)).join('/')}`);
  }
  return lines;
}

/** CPU time of a process, all its threads, microseconds. */
export function processMicros(pid: number): number {
  let total = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`))
      total += schedMicros(`${pid}/task/${task}`);
  } catch {
    // gone
  }
  return total;
}

/** A server of durable-server.ts. */
export interface BenchServer {
  url: string;
  pid: number;
  child: ChildProcess;
  /** SIGTERM, and waits for the exit (its connections closed). */
  stop(): Promise<void>;
}

/** Starts `durable-server.ts <mode> <url>` in a process of its own. */
export async function startDurableServer(mode: string, url: string): Promise<BenchServer> {
  const script = fileURLToPath(new URL('./durable-server.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      '--conditions=machine-routes-source',
      '--no-deprecation',
      '--import',
      'tsx',
      script,
      mode,
      url,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [port, pid] = await readyLine(child, `server ${mode}`);
  return {
    url: `http://127.0.0.1:${port}`,
    pid: Number(pid),
    child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
