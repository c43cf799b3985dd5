/**
 * Who holds a lock row, a job claim or a pending Idempotency-Key, named so that a taker can
 * tell for certain that the holder died and free its rows at once, whatever their TTL
 * (docs/persistence.md "Dead holders").
 *
 * SQLite: a file is shared by the processes of one host, so the operating system answers. The
 * holder text is `<boot id>/<pid namespace>/<pid>/<start time>`, all read from `/proc`, and the
 * holder is gone when its pid is no longer running, or runs another program (a pid reused
 * since: another start time), or is a zombie (killed, not yet reaped). Only a certain verdict
 * frees a row: a holder of another boot or pid namespace (another container on a shared
 * volume, the file on a network share) cannot be judged and counts as alive, as does every
 * holder where `/proc` is missing (not Linux): the TTL then frees it.
 *
 * PostgreSQL: the backend of a connection the process keeps open (postgres-holder.ts), asked of
 * `pg_stat_get_activity` in the statement that finds the row held ({@link holderGoneCall}).
 */
import { readFileSync, readlinkSync } from 'node:fs';
import type Database from 'better-sqlite3';

/** The name of the SQL function `registerHolderFunction` adds: `mr_holder_gone(holder)`. */
export const HOLDER_GONE_SQL = 'mr_holder_gone';

let own: string | null | undefined;
const registered = new WeakSet<Database.Database>();

/** This process as a holder, `null` where it cannot be named (no `/proc`). */
export function processHolder(): string | null {
  if (own === undefined) {
    try {
      own = `${bootId()}/${pidNamespace('self')}/${process.pid}/${startTime('self')}`;
    } catch {
      own = null;
    }
  }
  return own;
}

/** True only when `holder` names a process of this host that is certainly no longer running. */
export function holderGone(holder: string | null): boolean {
  if (holder === null) return false;
  const mine = processHolder();
  if (mine === null || holder === mine) return false;
  const [boot, namespace, pid, start] = holder.split('/');
  const [myBoot, myNamespace] = mine.split('/');
  // Another boot may be a reboot or another host sharing the file: not certain, so alive.
  if (boot !== myBoot || namespace !== myNamespace || pid === undefined) return false;
  let stat: string[];
  try {
    stat = statFields(pid);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  // Field 3 is the state (Z: zombie, X: dead), field 22 the start time in clock ticks.
  return stat[0] === 'Z' || stat[0] === 'X' || stat[19] !== start;
}

/**
 * Adds `mr_holder_gone(holder)` (1 when `holderGone`, else 0) to a connection: the lock,
 * claim and key statements call it inside their transaction, and only on a row found held.
 */
export function registerHolderFunction(db: Database.Database): void {
  // Once per connection: the store and the job queue may share one.
  if (registered.has(db)) return;
  registered.add(db);
  db.function(HOLDER_GONE_SQL, { deterministic: false }, (holder: unknown) =>
    holderGone(typeof holder === 'string' ? holder : null) ? 1 : 0,
  );
}

function bootId(): string {
  return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}

function pidNamespace(pid: string): string {
  return readlinkSync(`/proc/${pid}/ns/pid`);
}

function startTime(pid: string): string {
  return statFields(pid)[19]!;
}

// The fields of /proc/<pid>/stat from the third (state) on: the second, the command name in
// parentheses, may itself hold spaces and parentheses, so the split starts after its last ')'.
function statFields(pid: string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A backend of a PostgreSQL holder connection: its pid and start time (`backend_start` as text). */
export interface BackendHolder {
  pid: number;
  start: string;
  /**
   * The connection's startup named another process than the backend that answers (its
   * BackendKeyData): a pooler stands between this process and PostgreSQL.
   */
  pooled?: boolean;
}

/**
 * SQL that is true when the backend `pid` started at `start` (two column expressions) is
 * certainly gone. A row without a holder (written before migration 8) never is; a backend
 * whose start time the role may not see (another role without `pg_read_all_stats`) counts as
 * alive. Inline, for statements outside the store's schema (pg-boss's jobs); the store's own
 * call the function of {@link HOLDER_GONE_FUNCTION_POSTGRES}.
 */
export function holderGoneSql(pid: string, start: string): string {
  return `(${pid} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(${pid}) holder
    WHERE holder.backend_start IS NULL OR holder.backend_start = ${start}))`;
}

/**
 * {@link holderGoneSql} as a function of the store's schema (migration 10): a call is evaluated
 * only when reached, where the inline subquery, even never run, is set up by every execution of
 * its statement (12 us of server time per `loadForRead` without a lock row, against 2 us for
 * the call; `EXPLAIN ANALYZE`, medians of 400). PL/pgSQL, so the planner does not inline it.
 */
export const HOLDER_GONE_FUNCTION_POSTGRES = `CREATE FUNCTION machine_holder_gone(holder_pid integer, holder_start timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RETURN ${holderGoneSql('holder_pid', 'holder_start')};
END $$;`;

/** A call of the store's holder test on two column expressions (PostgreSQL). */
export function holderGoneCall(pid: string, start: string): string {
  return `machine_holder_gone(${pid}, ${start})`;
}
