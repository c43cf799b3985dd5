/**
 * What a request wrote, for the HTTP suite's zero-write checks: rows counted with the store's
 * own connection, and the store methods that write.
 */
import { PostgresStore } from '../../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../../../src/runtime/persistence/store.js';

/** Rows of every table a send or a lock writes, counted with the store's own connection. */
export async function countRows(store: Store): Promise<Record<string, number>> {
  const tables = [
    'machine_events',
    'machine_instances',
    'machine_current_states',
    'machine_locks',
    'machine_children',
  ];
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const sql = `SELECT COUNT(*) AS n FROM ${table}`;
    counts[table] =
      store instanceof SqliteStore
        ? (store.database.prepare(sql).get() as { n: number }).n
        : Number((await (store as PostgresStore).pool.query<{ n: string }>(sql)).rows[0]!.n);
  }
  return counts;
}

/** Store methods that write a row (history, instance, lock, children). */
export const WRITE_METHODS = [
  'commit',
  'tryAcquireLock',
  'releaseLock',
  'sweepExpiredLocks',
  'upsertChildren',
] as const;
