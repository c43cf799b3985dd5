/**
 * The embedded queue's storage: the `machine_jobs` table (schema.ts) on a better-sqlite3
 * connection, normally the SQLite store's own. Every write is one `BEGIN IMMEDIATE` transaction,
 * so several processes sharing the file claim jobs one at a time (SQLite's write lock) and a job
 * is never claimed twice while its lease runs and its worker lives. A claim names its worker
 * process (`lease_holder`, persistence/holders.ts): a job whose worker died is claimed again at
 * the next poll of any worker, whatever its lease.
 */
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import type { Json } from './job-queue.js';
import { newUlid } from '../ids.js';
import { HOLDER_GONE_SQL, processHolder, registerHolderFunction } from '../persistence/holders.js';
import { SqliteStore } from '../persistence/sqlite-store.js';
import {
  retryDelayMs,
  type ClaimedJob,
  type JobBackend,
  type NewJob,
  type OutboxWriter,
  type PendingScope,
} from './job-backend.js';
import type { FailedJob } from './types.js';

/** Why a last attempt cut by a shutdown failed. */
const SHUTDOWN_CUT =
  'The attempt did not finish: its worker stopped at shutdown before it did (MACHINE_SHUTDOWN_TIMEOUT).';

const SQL = {
  insert: `INSERT INTO machine_jobs (id, name, payload, job_key, status, run_at, available_at, attempts,
      max_attempts, backoff_ms, timeout_ms, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING`,
  due: `SELECT id, name, payload, job_key, status, run_at, attempts, max_attempts, backoff_ms, timeout_ms
    FROM machine_jobs
    WHERE status <> 'failed' AND available_at <= ? AND name IN (SELECT value FROM json_each(?))
    ORDER BY available_at, id LIMIT ?`,
  anyDue: `SELECT 1 FROM machine_jobs
    WHERE status <> 'failed' AND available_at <= ? AND name IN (SELECT value FROM json_each(?)) LIMIT 1`,
  // Running rows whose worker process is gone (holders.ts), others' only: claimed at once,
  // whatever their lease. The partial index keeps this to the running rows.
  anyAbandoned: `SELECT 1 FROM machine_jobs
    WHERE status = 'running' AND lease_holder <> ? AND name IN (SELECT value FROM json_each(?))
      AND ${HOLDER_GONE_SQL}(lease_holder) LIMIT 1`,
  abandoned: `SELECT id, name, payload, job_key, status, run_at, attempts, max_attempts, backoff_ms, timeout_ms
    FROM machine_jobs
    WHERE status = 'running' AND lease_holder <> ? AND name IN (SELECT value FROM json_each(?))
      AND ${HOLDER_GONE_SQL}(lease_holder)
    ORDER BY available_at, id LIMIT ?`,
  claim: `UPDATE machine_jobs SET status = 'running', attempts = attempts + 1, lease_owner = ?,
      lease_holder = ?, available_at = ?, updated_at = ? WHERE id = ?`,
  expire: `UPDATE machine_jobs SET status = 'failed', lease_owner = NULL, last_error = ?, updated_at = ?
    WHERE id = ?`,
  complete: `DELETE FROM machine_jobs WHERE id = ? AND lease_owner = ?`,
  retry: `UPDATE machine_jobs SET status = 'queued', run_at = ?, available_at = ?, lease_owner = NULL,
      last_error = ?, updated_at = ? WHERE id = ? AND lease_owner = ?`,
  fail: `UPDATE machine_jobs SET status = 'failed', lease_owner = NULL, last_error = ?, updated_at = ?
    WHERE id = ? AND lease_owner = ?`,
  // The attempt stays counted (it may have done part of its work), as a dead worker's does.
  release: `UPDATE machine_jobs SET status = 'queued', available_at = ?, lease_owner = NULL,
      lease_holder = NULL, updated_at = ? WHERE id = ? AND lease_owner = ? AND attempts < max_attempts`,
  countDue: `SELECT count(*) FROM machine_jobs
    WHERE status <> 'failed' AND (status = 'running' OR available_at <= ?)
      AND name IN (SELECT value FROM json_each(?))`,
  countAll: `SELECT count(*) FROM machine_jobs
    WHERE status <> 'failed' AND name IN (SELECT value FROM json_each(?))`,
  // One more attempt than it has had, due now (attempts > 0 keeps it out of the dedup index).
  retryFailed: `UPDATE machine_jobs SET status = 'queued', max_attempts = attempts + 1, run_at = ?,
      available_at = ?, lease_owner = NULL, updated_at = ? WHERE id = ? AND name = ? AND status = 'failed'`,
  failed: `SELECT id, name, payload, job_key, attempts, last_error FROM machine_jobs
    WHERE status = 'failed' AND (? IS NULL OR name = ?) ORDER BY updated_at, id`,
} as const;

type Statements = { -readonly [K in keyof typeof SQL]: Database.Statement };

interface JobRow {
  id: string;
  name: string;
  payload: string;
  job_key: string | null;
  status: 'queued' | 'running' | 'failed';
  run_at: string;
  attempts: number;
  max_attempts: number;
  backoff_ms: number;
  timeout_ms: number;
  last_error: string | null;
}

/** `JobBackend` on the `machine_jobs` table of a SQLite database. */
export class SqliteJobBackend implements JobBackend {
  readonly #db: Database.Database;
  readonly #ownsDatabase: boolean;
  readonly #sql: Statements;
  readonly #claim: (names: readonly string[], limit: number) => ClaimedJob[];

  /** `ownsDatabase`: `close()` closes the connection too. */
  constructor(db: Database.Database, ownsDatabase: boolean) {
    const table = db
      .prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'machine_jobs'`)
      .get();
    if (table === undefined) {
      throw new Error(
        `The SQLite database '${db.name}' has no machine_jobs table: run the store migrations first ` +
          `(SqliteStore migrates on open; or 'machine-routes migrate').`,
      );
    }
    this.#db = db;
    this.#ownsDatabase = ownsDatabase;
    registerHolderFunction(db);
    const prepared = {} as Statements;
    for (const key of Object.keys(SQL) as (keyof typeof SQL)[])
      prepared[key] = db.prepare(SQL[key]);
    this.#sql = prepared;
    const claim = db.transaction((names: readonly string[], limit: number) =>
      this.#claimNow(names, limit),
    );
    // IMMEDIATE: take the write lock before reading, so two processes never pick the same rows.
    this.#claim = (names, limit) => claim.immediate(names, limit);
  }

  async prepare(): Promise<void> {}

  async insert(job: NewJob): Promise<void> {
    insertJobRow(this.#sql.insert, job);
  }

  /**
   * Jobs go into the commit of a `SqliteStore` on the same database file (its connection, its
   * transaction): the store's migrations made this very `machine_jobs` table.
   */
  outboxFor(store: unknown): OutboxWriter | null {
    if (!(store instanceof SqliteStore) || !sameDatabase(store.database, this.#db)) return null;
    return (transaction, jobs) => {
      if (transaction.kind !== 'sqlite')
        throw new Error('The embedded job queue writes jobs into SQLite transactions only.');
      const insert = insertStatement(transaction.database);
      for (const job of jobs) insertJobRow(insert, job);
    };
  }

  async claim(names: readonly string[], limit: number): Promise<ClaimedJob[]> {
    // The store closed its connection under a worker still polling it: nothing to claim.
    if (!this.#db.open) return [];
    // An idle poll stays a plain read: the write lock is taken only when there is work to claim.
    const list = JSON.stringify(names);
    if (
      this.#sql.anyDue.get(new Date().toISOString(), list) === undefined &&
      this.#sql.anyAbandoned.get(processHolder(), list) === undefined
    )
      return [];
    return this.#claim(names, limit);
  }

  #claimNow(names: readonly string[], limit: number): ClaimedJob[] {
    const nowMs = Date.now();
    const now = new Date(nowMs).toISOString();
    const list = JSON.stringify(names);
    const holder = processHolder();
    // A dead worker's jobs first: they were due before anything queued since.
    const abandoned = this.#sql.abandoned.all(holder, list, limit) as JobRow[];
    const dead = new Set(abandoned.map((row) => row.id));
    const rows = [
      ...abandoned,
      ...(this.#sql.due.all(now, list, limit) as JobRow[]).filter((row) => !dead.has(row.id)),
    ].slice(0, limit);
    const claimed: ClaimedJob[] = [];
    for (const row of rows) {
      if (row.status === 'running' && row.attempts >= row.max_attempts) {
        // The last attempt's worker never reported back: that attempt failed too.
        this.#sql.expire.run(unfinished(row, dead.has(row.id)), now, row.id);
        continue;
      }
      const token = newUlid();
      this.#sql.claim.run(
        token,
        holder,
        new Date(nowMs + row.timeout_ms).toISOString(),
        now,
        row.id,
      );
      claimed.push({
        token,
        maxAttempts: row.max_attempts,
        backoffMs: row.backoff_ms,
        info: {
          id: row.id,
          name: row.name,
          payload: JSON.parse(row.payload) as Json,
          runAt: new Date(row.run_at),
          key: row.job_key,
          attempt: row.attempts + 1,
        },
      });
    }
    return claimed;
  }

  async complete(job: ClaimedJob): Promise<void> {
    this.#sql.complete.run(job.info.id, job.token);
  }

  async fail(job: ClaimedJob, error: string): Promise<void> {
    const now = new Date();
    if (job.info.attempt >= job.maxAttempts) {
      this.#sql.fail.run(error, now.toISOString(), job.info.id, job.token);
      return;
    }
    const retryAt = new Date(
      now.getTime() + retryDelayMs(job.backoffMs, job.info.attempt),
    ).toISOString();
    this.#sql.retry.run(retryAt, retryAt, error, now.toISOString(), job.info.id, job.token);
  }

  async release(job: ClaimedJob): Promise<void> {
    if (!this.#db.open) return;
    const now = new Date().toISOString();
    if (this.#sql.release.run(now, now, job.info.id, job.token).changes === 0)
      this.#sql.fail.run(SHUTDOWN_CUT, now, job.info.id, job.token);
  }

  async count(names: readonly string[], scope: PendingScope): Promise<number> {
    const list = JSON.stringify(names);
    const statement = scope === 'due' ? this.#sql.countDue : this.#sql.countAll;
    const args = scope === 'due' ? [new Date().toISOString(), list] : [list];
    return statement.pluck().get(...args) as number;
  }

  async failed(name?: string): Promise<FailedJob[]> {
    const rows = this.#sql.failed.all(name ?? null, name ?? null) as JobRow[];
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      payload: JSON.parse(row.payload) as Json,
      key: row.job_key,
      attempts: row.attempts,
      lastError: row.last_error ?? '',
    }));
  }

  async retryFailed(name: string, id: string): Promise<boolean> {
    const now = new Date().toISOString();
    return this.#sql.retryFailed.run(now, now, now, id, name).changes === 1;
  }

  async close(): Promise<void> {
    if (this.#ownsDatabase && this.#db.open) this.#db.close();
  }
}

// One prepared insert per connection: outbox writes run on the store's connection.
const insertStatements = new WeakMap<Database.Database, Database.Statement>();

function insertStatement(db: Database.Database): Database.Statement {
  let statement = insertStatements.get(db);
  if (statement === undefined) {
    statement = db.prepare(SQL.insert);
    insertStatements.set(db, statement);
  }
  return statement;
}

function insertJobRow(insert: Database.Statement, job: NewJob): void {
  const now = new Date().toISOString();
  const runAt = (job.runAt ?? new Date()).toISOString();
  insert.run(
    newUlid(),
    job.name,
    JSON.stringify(job.payload),
    job.key,
    runAt,
    runAt,
    job.maxAttempts,
    Math.round(job.backoffMs),
    Math.round(job.timeoutMs),
    now,
    now,
  );
}

/** The same connection, or two connections on the same file (`:memory:` databases never are). */
function sameDatabase(a: Database.Database, b: Database.Database): boolean {
  if (a === b) return true;
  if (a.memory || b.memory || a.name === '' || b.name === '') return false;
  return resolve(a.name) === resolve(b.name);
}

function unfinished(row: JobRow, workerGone: boolean): string {
  return workerGone
    ? `Attempt ${row.attempts} of ${row.max_attempts} did not finish: its worker process died.`
    : `Attempt ${row.attempts} of ${row.max_attempts} timed out: not finished within ` +
        `${row.timeout_ms} ms (its worker died or the handler hung).`;
}
