/**
 * The statements the pg-boss backend runs on pg-boss's `job` table itself, where pg-boss's API
 * falls short: the claim that names its worker's holder, a dead holder's jobs returned to the
 * queue, an attempt given back at shutdown, counts and the failed jobs (`archive` included).
 * Written against pg-boss 10's schema (the `short` queue policy).
 */
import type PgBoss from 'pg-boss';
import type { Json } from './job-queue.js';
import { holderGoneSql, type BackendHolder } from '../persistence/holders.js';
import type { PendingScope } from './job-backend.js';
import type { FailedJob } from './types.js';

/** What a job keeps in pg-boss's `data` column. */
export interface PgJobData {
  /** The payload as JSON text (pg-boss keeps `data` as `jsonb`, which reorders object keys). */
  json: string;
  key: string | null;
}

/** A job as {@link fetchJobs} claims it. */
export interface FetchedRow {
  id: string;
  data: PgJobData;
  retry_limit: number;
  retry_count: number;
  retry_delay: number;
  start_after: Date;
}

interface FailedRow {
  id: string;
  name: string;
  data: PgJobData;
  output: { message?: string; value?: { message?: string } } | null;
  retry_count: number;
}

/** What a claim writes into pg-boss's `output` until the attempt ends: its worker's holder. */
const HOLDER_KEY = 'machineRoutesHolder';

/**
 * pg-boss 10's `fetch` (its `fetchNextJob` for queues of the `short` policy, the only one
 * the backend creates), which also names the claiming worker's holder in the job's `output`
 * (pg-boss has no column for it; its `complete` and `fail` overwrite it): one statement, where
 * `fetch` and then an UPDATE naming the holder were two round trips per claim (1.84x plain
 * pg-boss's time per job, bench/scale/jobs.ts). A job is never active without its holder.
 */
export async function fetchJobs(
  db: PgBoss.Db,
  schema: string,
  name: string,
  limit: number,
  holder: BackendHolder,
): Promise<FetchedRow[]> {
  const result = await db.executeSql(
    `WITH next AS (
        SELECT id FROM ${schema}.job
        WHERE name = $1 AND state < 'active' AND start_after < now()
        ORDER BY priority DESC, created_on, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED)
      UPDATE ${schema}.job j SET state = 'active', started_on = now(),
        retry_count = CASE WHEN started_on IS NOT NULL THEN retry_count + 1 ELSE retry_count END,
        output = jsonb_build_object($3::text, jsonb_build_object('pid', $4::int, 'start', $5::text))
      FROM next WHERE j.name = $1 AND j.id = next.id
      RETURNING j.id, j.data, j.retry_limit, j.retry_count, j.retry_delay, j.start_after`,
    [name, limit, HOLDER_KEY, holder.pid, holder.start],
  );
  return result.rows as FetchedRow[];
}

/**
 * The statement of {@link returnAbandoned}: active jobs of `$1` (queue names) whose claim
 * (`output ? $2`) names a holder backend that is gone go back to the queue, as `retry` due now,
 * or are answered when that was their last attempt. It reads active rows through
 * {@link ACTIVE_JOBS_INDEX}.
 */
export function returnAbandonedSql(schema: string): string {
  const holder = (column: string) => `(output->'${HOLDER_KEY}'->>'${column}')`;
  return `WITH dead AS (
        SELECT name, id, retry_count < retry_limit AS retry FROM ${schema}.job
        WHERE name = ANY($1::text[]) AND state = 'active' AND output ? $2
          AND ${holderGoneSql(`${holder('pid')}::int`, `${holder('start')}::timestamptz`)}
        FOR UPDATE SKIP LOCKED),
      retried AS (
        UPDATE ${schema}.job j SET state = 'retry', start_after = now(), output = NULL
        FROM dead WHERE dead.retry AND j.name = dead.name AND j.id = dead.id)
      SELECT name, id FROM dead WHERE NOT retry`;
}

/**
 * Active jobs of `names` whose worker's backend is gone go back to the queue at once (state
 * `retry`, due now); answers those that were on their last attempt, for the caller to fail. A
 * live worker's jobs are never touched, however long they run.
 */
export async function returnAbandoned(
  db: PgBoss.Db,
  schema: string,
  names: readonly string[],
): Promise<{ name: string; id: string }[]> {
  const result = await db.executeSql(returnAbandonedSql(schema), [names, HOLDER_KEY]);
  return result.rows as { name: string; id: string }[];
}

/**
 * Our partial index of pg-boss's active jobs (`ON job (name) WHERE state = 'active'`), made by
 * {@link ensureActiveJobsIndex}. pg-boss's own indexes cover jobs before `active` and some
 * policies' singletons, not active jobs; without it every worker's reclaim, once a second, read
 * every row of its queues, and pg-boss keeps completed jobs in `job` for 12 hours (137 ms of
 * database time per reclaim with 200,000 of them, 0.14 ms with the index,
 * `bench/scale/reclaim-scan.ts`).
 */
export const ACTIVE_JOBS_INDEX = 'machine_routes_job_active';

/** Tries of the index's creation before a deadlock is thrown (as for pg-boss's createQueue). */
const INDEX_TRIES = 8;

/**
 * Creates {@link ACTIVE_JOBS_INDEX} on pg-boss's partitioned `job` table when it is missing.
 * PostgreSQL builds it on every queue's partition, and on each partition pg-boss attaches later
 * (`create_queue` attaches an empty table, so that is instant). Only the first process after an
 * upgrade builds it: it holds a share lock on each partition while it reads it, so jobs of that
 * queue wait for the build (123 ms for 200,000 rows). Looked up first, so an open that
 * finds it takes no lock. Two processes building it at once, or a build meeting a queue's
 * creation, can fail with a deadlock or a duplicate name: it is tried again, as createQueue is.
 */
export async function ensureActiveJobsIndex(db: PgBoss.Db, schema: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const found = await db.executeSql(`SELECT to_regclass($1) IS NOT NULL AS found`, [
      `${schema}.${ACTIVE_JOBS_INDEX}`,
    ]);
    if ((found.rows[0] as { found: boolean }).found) return;
    try {
      await db.executeSql(
        `CREATE INDEX IF NOT EXISTS ${ACTIVE_JOBS_INDEX} ON ${schema}.job (name) WHERE state = 'active'`,
        [],
      );
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const retried = code === '40P01' || code === '23505' || code === '42P07';
      if (attempt >= INDEX_TRIES || !retried) throw error;
      const wait = Math.min(1000, 25 * 2 ** attempt);
      await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
    }
  }
}

/**
 * An active attempt given back: due now in state `retry`, the attempt counted, as
 * {@link returnAbandoned} does for a dead worker. False when it was the last attempt.
 */
export async function retryNow(
  db: PgBoss.Db,
  schema: string,
  name: string,
  id: string,
): Promise<boolean> {
  const result = await db.executeSql(
    `UPDATE ${schema}.job SET state = 'retry', start_after = now(), output = NULL
      WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count < retry_limit`,
    [name, id],
  );
  return (result as { rowCount?: number }).rowCount !== 0;
}

/** Jobs of `names` not finished (`all`), or running or due now (`due`). */
export async function countJobs(
  db: PgBoss.Db,
  schema: string,
  names: readonly string[],
  scope: PendingScope,
): Promise<number> {
  const condition =
    scope === 'due'
      ? `(state = 'active' OR (state IN ('created', 'retry') AND start_after <= now()))`
      : `state IN ('created', 'retry', 'active')`;
  const result = await db.executeSql(
    `SELECT count(*)::int AS n FROM ${schema}.job WHERE name = ANY($1::text[]) AND ${condition}`,
    [names],
  );
  return (result.rows[0] as { n: number }).n;
}

/** Failed jobs (of `name`, or all), those already moved to the archive included. */
export async function failedJobs(
  db: PgBoss.Db,
  schema: string,
  name?: string,
): Promise<FailedJob[]> {
  const select = (table: string) =>
    `SELECT id, name, data, output, retry_count, completed_on FROM ${schema}.${table}
      WHERE state = 'failed' AND ($1::text IS NULL OR name = $1)`;
  const result = await db.executeSql(
    `${select('job')} UNION ALL ${select('archive')} ORDER BY completed_on, id`,
    [name ?? null],
  );
  return (result.rows as FailedRow[]).map((row) => ({
    id: row.id,
    name: row.name,
    payload: JSON.parse(row.data.json) as Json,
    key: row.data.key,
    attempts: row.retry_count + 1,
    lastError: row.output?.message ?? row.output?.value?.message ?? JSON.stringify(row.output),
  }));
}
