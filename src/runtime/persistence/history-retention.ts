/**
 * History retention (`MACHINE_HISTORY_RETENTION_DAYS`, docs/operations.md "History retention"):
 * deletes the history of instances that finished before a cutoff, a batch of instances per
 * transaction, on SQLite and PostgreSQL (the memory store keeps everything). With `archive`
 * (`MACHINE_HISTORY_RETENTION_ARCHIVE`) the same transaction first copies the records into
 * `machine_events_archive` (migration 22): a batch is moved whole or not at all, so a sweep cut
 * anywhere (a killed worker) resumes with the instances it had not marked, and no record is
 * archived twice or lost.
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
   * finish first, in one transaction (with `archive`, moved to `machine_events_archive` in it);
   * returns what it deleted (`instances < limit`: none left).
   */
  deleteFinishedBefore(
    cutoff: Date,
    limit: number,
    options?: RetentionBatchOptions,
  ): Promise<RetentionBatch>;
}

/** How a batch disposes of the records. */
export interface RetentionBatchOptions {
  /** Copy the records into `machine_events_archive` before deleting them (default false). */
  archive?: boolean;
}

/** The columns of `machine_events`, which `machine_events_archive` repeats. */
const EVENT_COLUMNS = `id, sequence_number, created_at, machine_id, root_event_id, source, type,
  payload, machine_value, context, version, actor, meta`;

/**
 * Migration 22 (both stores): the archive of history records. The columns of `machine_events`
 * plus `archived_at`; no constraint but the key (a record is archived once: the batch that moves
 * it also marks its instance, and `ON CONFLICT DO NOTHING` guards a row restored by hand), and
 * one index to read an instance's archived timeline in order. Nothing in the runtime reads it:
 * it is the operator's, to export and empty on their own schedule.
 */
export const HISTORY_ARCHIVE_SQLITE = `CREATE TABLE machine_events_archive (
  id              TEXT PRIMARY KEY,
  sequence_number INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  machine_id      TEXT NOT NULL,
  root_event_id   TEXT NOT NULL,
  source          TEXT NOT NULL,
  type            TEXT NOT NULL,
  payload         TEXT,
  machine_value   TEXT NOT NULL,
  context         TEXT,
  version         INTEGER NOT NULL,
  actor           TEXT,
  meta            TEXT,
  archived_at     TEXT NOT NULL
);
CREATE INDEX machine_events_archive_root_idx ON machine_events_archive (root_event_id, sequence_number);`;

/** Migration 22 on PostgreSQL. */
export const HISTORY_ARCHIVE_POSTGRES = `CREATE TABLE machine_events_archive (
  id              text PRIMARY KEY,
  sequence_number integer NOT NULL,
  created_at      timestamptz NOT NULL,
  machine_id      text NOT NULL,
  root_event_id   text NOT NULL,
  source          text NOT NULL,
  type            text NOT NULL,
  payload         json,
  machine_value   json NOT NULL,
  context         json,
  version         integer NOT NULL,
  actor           text,
  meta            json,
  archived_at     timestamptz NOT NULL
);
CREATE INDEX machine_events_archive_root_idx ON machine_events_archive (root_event_id, sequence_number);`;

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
  let batch:
    ((cutoff: string, limit: number, now: string, archive: boolean) => RetentionBatch) | undefined;
  const prepare = (): NonNullable<typeof batch> => {
    const select = db.prepare(`SELECT root_event_id FROM machine_instances
      WHERE status = 'done' AND history_deleted_at IS NULL AND updated_at < ?
      ORDER BY updated_at LIMIT ?`);
    const deleteEvents = db.prepare(`DELETE FROM machine_events WHERE root_event_id = ?`);
    const archiveEvents =
      db.prepare(`INSERT INTO machine_events_archive (${EVENT_COLUMNS}, archived_at)
      SELECT ${EVENT_COLUMNS}, ? FROM machine_events WHERE root_event_id = ?
      ON CONFLICT (id) DO NOTHING`);
    // Timer rows left by instances finished by older versions (a finish now deletes them).
    const deleteFires = db.prepare(`DELETE FROM machine_timer_fires WHERE root_event_id = ?`);
    const deleteFailures = db.prepare(`DELETE FROM machine_timer_failures WHERE root_event_id = ?`);
    const mark = db.prepare(`UPDATE machine_instances SET history_deleted_at = ?
      WHERE root_event_id = ? AND status = 'done'`);
    // Selected inside the write transaction: no other writer can finish or touch a row between
    // the read and the deletes (SQLite has one writer at a time).
    const run = db.transaction(
      (cutoff: string, limit: number, now: string, archive: boolean): RetentionBatch => {
        const ids = (select.all(cutoff, limit) as { root_event_id: string }[]).map(
          (row) => row.root_event_id,
        );
        let records = 0;
        for (const id of ids) {
          if (archive) archiveEvents.run(now, id);
          records += deleteEvents.run(id).changes;
          deleteFires.run(id);
          deleteFailures.run(id);
          mark.run(now, id);
        }
        return { instances: ids.length, records };
      },
    );
    return (cutoff, limit, now, archive) => run.immediate(cutoff, limit, now, archive);
  };
  return {
    async deleteFinishedBefore(cutoff, limit, options = {}) {
      batch ??= prepare();
      return batch(cutoff.toISOString(), limit, new Date().toISOString(), options.archive === true);
    },
  };
}

/**
 * Retention on PostgreSQL: one statement per batch. `SKIP LOCKED`: two workers sweeping at once
 * take different instances instead of waiting on each other's rows. The archive copy inserts the
 * rows the delete returns (`$3` false: none), in the same statement and so the same transaction.
 */
export function postgresHistoryRetention(pool: pg.Pool): HistoryRetentionStore {
  const sql = `WITH batch AS (
      SELECT root_event_id FROM machine_instances
      WHERE status = 'done' AND history_deleted_at IS NULL AND updated_at < $1
      ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED),
    gone AS (DELETE FROM machine_events e USING batch b
      WHERE e.root_event_id = b.root_event_id RETURNING e.*),
    archived AS (INSERT INTO machine_events_archive (${EVENT_COLUMNS}, archived_at)
      SELECT ${EVENT_COLUMNS}, now() FROM gone WHERE $3::boolean
      ON CONFLICT (id) DO NOTHING),
    fires AS (DELETE FROM machine_timer_fires f USING batch b WHERE f.root_event_id = b.root_event_id),
    failures AS (DELETE FROM machine_timer_failures f USING batch b
      WHERE f.root_event_id = b.root_event_id),
    marked AS (UPDATE machine_instances i SET history_deleted_at = now()
      FROM batch b WHERE i.root_event_id = b.root_event_id RETURNING 1)
    SELECT (SELECT count(*) FROM marked)::int AS instances, (SELECT count(*) FROM gone)::int AS records`;
  return {
    async deleteFinishedBefore(cutoff, limit, options = {}) {
      const result = await pool.query<RetentionBatch>(sql, [
        cutoff,
        limit,
        options.archive === true,
      ]);
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
