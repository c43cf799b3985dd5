/**
 * The embedded default: jobs in the `machine_jobs` table of the SQLite store (or of a private
 * in-memory database), run by an in-process worker. Several processes may share one SQLite file;
 * each claims jobs under SQLite's write lock.
 */
import type Database from 'better-sqlite3';
import { sqliteDriver } from '../persistence/sqlite-driver.js';
import { JOBS_LEASE_HOLDER_SQLITE, JOBS_TABLE_SQLITE } from '../persistence/job-schema.js';
import { PollingJobQueue } from './polling-job-queue.js';
import { SqliteJobBackend } from './sqlite-job-backend.js';
import type { DurableJobQueueOptions } from './types.js';

/** Options of `EmbeddedJobQueue`. */
export interface EmbeddedJobQueueOptions extends DurableJobQueueOptions {
  /**
   * A migrated SQLite connection (`SqliteStore.database`), shared with the store so jobs live
   * in the same file.
   */
  database: Database.Database;
  /** Close `database` when the queue closes (default false: the store owns it). */
  closeDatabase?: boolean;
}

/** Durable queue on the `machine_jobs` table of a SQLite database. */
export class EmbeddedJobQueue extends PollingJobQueue {
  constructor(options: EmbeddedJobQueueOptions) {
    const { database, closeDatabase = false, ...rest } = options;
    super(new SqliteJobBackend(database, closeDatabase), rest);
  }

  /**
   * A queue on a private in-memory database: jobs do not survive the process, as with the
   * `memory:` store. Its database is closed with the queue.
   */
  static inMemory(options: DurableJobQueueOptions = {}): EmbeddedJobQueue {
    return new EmbeddedJobQueue({
      ...options,
      database: createJobsDatabase(),
      closeDatabase: true,
    });
  }
}

/** A new in-memory SQLite database holding just the jobs table. */
export function createJobsDatabase(): Database.Database {
  const Driver = sqliteDriver();
  const database = new Driver(':memory:');
  database.exec(JOBS_TABLE_SQLITE);
  database.exec(JOBS_LEASE_HOLDER_SQLITE);
  return database;
}
