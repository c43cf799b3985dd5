/**
 * History retention (`MACHINE_HISTORY_RETENTION_DAYS`, docs/operations.md "History retention"):
 * deletes the history of instances that finished before a cutoff, a batch of instances per
 * transaction, on SQLite and PostgreSQL (the memory store keeps everything).
 *
 * Only finished instances (`status = 'done'`) whose last commit (`updated_at`, their finish) is
 * older than the cutoff lose their history, and they lose all of it at once: a running instance
 * keeps every record (its timeline, and the sequence its next commit is fenced on), and a
 * finished one never shows a timeline with its beginning cut off. The instance row (final state
 * and context) stays; `history_deleted_at` (migration 15) marks it done, so it leaves the partial
 * index the sweep reads and each sweep only reads instances it has work for. Their timer fire
 * and failure rows go too: the finishing commit deletes them, but instances finished by older
 * versions left theirs behind.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';

/** What one batch deleted. */
export interface RetentionBatch {
  /** Finished instances whose history was deleted. */
  instances: number;
  /** History records deleted. */
  records: number;
}

/** The retention deletes of a store. */
export interface HistoryRetentionStore {
  /**
   * Deletes the history of at most `limit` instances that finished before `cutoff`, oldest
   * finish first, in one transaction; returns what it deleted (`instances < limit`: none left).
   */
  deleteFinishedBefore(cutoff: Date, limit: number): Promise<RetentionBatch>;
}

/** Migration 15 on SQLite. */
export const HISTORY_RETENTION_SQLITE = `ALTER TABLE machine_instances ADD COLUMN history_deleted_at TEXT;
CREATE INDEX machine_instances_retention_idx ON machine_instances (updated_at)
  WHERE status = 'done' AND history_deleted_at IS NULL;`;

/** Migration 15 on PostgreSQL. */
export const HISTORY_RETENTION_POSTGRES = `ALTER TABLE machine_instances ADD COLUMN history_deleted_at timestamptz;
CREATE INDEX machine_instances_retention_idx ON machine_instances (updated_at)
  WHERE status = 'done' AND history_deleted_at IS NULL;`;

/** Retention on a SQLite database: one write transaction per batch. */
export function sqliteHistoryRetention(db: Database.Database): HistoryRetentionStore {
  // Prepared on first use: the store is built before its migrations run.
  let batch: ((cutoff: string, limit: number, now: string) => RetentionBatch) | undefined;
  const prepare = (): NonNullable<typeof batch> => {
    const select = db.prepare(`SELECT root_event_id FROM machine_instances
      WHERE status = 'done' AND history_deleted_at IS NULL AND updated_at < ?
      ORDER BY updated_at LIMIT ?`);
    const deleteEvents = db.prepare(`DELETE FROM machine_events WHERE root_event_id = ?`);
    // Timer rows left by instances finished by older versions (a finish now deletes them).
    const deleteFires = db.prepare(`DELETE FROM machine_timer_fires WHERE root_event_id = ?`);
    const deleteFailures = db.prepare(`DELETE FROM machine_timer_failures WHERE root_event_id = ?`);
    const mark = db.prepare(`UPDATE machine_instances SET history_deleted_at = ?
      WHERE root_event_id = ? AND status = 'done'`);
    // Selected inside the write transaction: no other writer can finish or touch a row between
    // the read and the deletes (SQLite has one writer at a time).
    const run = db.transaction((cutoff: string, limit: number, now: string): RetentionBatch => {
      const ids = (select.all(cutoff, limit) as { root_event_id: string }[]).map(
        (row) => row.root_event_id,
      );
      let records = 0;
      for (const id of ids) {
        records += deleteEvents.run(id).changes;
        deleteFires.run(id);
        deleteFailures.run(id);
        mark.run(now, id);
      }
      return { instances: ids.length, records };
    });
    return (cutoff, limit, now) => run.immediate(cutoff, limit, now);
  };
  return {
    async deleteFinishedBefore(cutoff, limit) {
      batch ??= prepare();
      return batch(cutoff.toISOString(), limit, new Date().toISOString());
    },
  };
}

/**
 * Retention on PostgreSQL: one statement per batch. `SKIP LOCKED`: two workers sweeping at once
 * take different instances instead of waiting on each other's rows.
 */
export function postgresHistoryRetention(pool: pg.Pool): HistoryRetentionStore {
  const sql = `WITH batch AS (
      SELECT root_event_id FROM machine_instances
      WHERE status = 'done' AND history_deleted_at IS NULL AND updated_at < $1
      ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
    gone AS (DELETE FROM machine_events e USING batch b
      WHERE e.root_event_id = b.root_event_id RETURNING 1),
    fires AS (DELETE FROM machine_timer_fires f USING batch b WHERE f.root_event_id = b.root_event_id),
    failures AS (DELETE FROM machine_timer_failures f USING batch b
      WHERE f.root_event_id = b.root_event_id),
    marked AS (UPDATE machine_instances i SET history_deleted_at = now()
      FROM batch b WHERE i.root_event_id = b.root_event_id RETURNING 1)
    SELECT (SELECT count(*) FROM marked)::int AS instances, (SELECT count(*) FROM gone)::int AS records`;
  return {
    async deleteFinishedBefore(cutoff, limit) {
      const result = await pool.query<RetentionBatch>(sql, [cutoff, limit]);
      return result.rows[0] ?? { instances: 0, records: 0 };
    },
  };
}

/**
 * The memory store keeps every record: its history ends with the process anyway, and its reads
 * take an instance's creation time from its first record.
 */
export const memoryHistoryRetention: HistoryRetentionStore = {
  async deleteFinishedBefore() {
    return { instances: 0, records: 0 };
  },
};
