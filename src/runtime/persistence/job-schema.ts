/**
 * The jobs table of the embedded queue, applied by the store migrations (persistence/
 * migrations.ts). On PostgreSQL jobs live in pg-boss's own schema, so that dialect has no table.
 *
 * One row per job until it completes (then it is deleted) or uses up its attempts (then it stays,
 * `failed`, with its last error). `available_at` is when the row may next be claimed: its run
 * time while `queued`, its lease expiry while `running` (a worker that died leaves a `running`
 * row whose expiry passes, and the next claim takes it over). Times are ISO-8601 text, as in the
 * other SQLite tables, so text order is time order.
 */
export const JOBS_TABLE_SQLITE = `
CREATE TABLE machine_jobs (
  id           TEXT PRIMARY KEY,
  name         TEXT NOT NULL,
  payload      TEXT NOT NULL,
  job_key      TEXT,
  status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'failed')),
  run_at       TEXT NOT NULL,
  available_at TEXT NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  backoff_ms   INTEGER NOT NULL,
  timeout_ms   INTEGER NOT NULL,
  lease_owner  TEXT,
  last_error   TEXT,
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
);
-- Claims: due rows (queued and due, or running with an expired lease) in time order.
CREATE INDEX machine_jobs_available_idx ON machine_jobs (available_at) WHERE status <> 'failed';
-- Dedup: one job per (name, key) that has not started yet; enqueueing another is a no-op.
CREATE UNIQUE INDEX machine_jobs_waiting_key_uq ON machine_jobs (name, job_key)
  WHERE status = 'queued' AND attempts = 0 AND job_key IS NOT NULL;
`;

/** PostgreSQL side of the same migration: nothing (pg-boss keeps jobs in its own schema). */
export const JOBS_TABLE_POSTGRES = `
-- Jobs on PostgreSQL are kept by pg-boss in its own schema (src/runtime/jobs/pg-boss-job-queue.ts).
SELECT 1;
`;

/**
 * Migration 8 on the jobs table: a claim names its worker process (`lease_holder`,
 * persistence/holders.ts), and running rows are indexed by it, so a dead worker's jobs are found
 * without reading the queued ones.
 */
export const JOBS_LEASE_HOLDER_SQLITE = `
ALTER TABLE machine_jobs ADD COLUMN lease_holder TEXT;
CREATE INDEX machine_jobs_running_idx ON machine_jobs (lease_holder) WHERE status = 'running';
`;
