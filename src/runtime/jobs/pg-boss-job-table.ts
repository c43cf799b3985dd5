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
 * Active jobs of `names` whose worker's backend is gone go back to the queue at once (state
 * `retry`, due now); answers those that were on their last attempt, for the caller to fail. A
 * live worker's jobs are never touched, however long they run.
 */
export async function returnAbandoned(
  db: PgBoss.Db,
  schema: string,
  names: readonly string[],
): Promise<{ name: string; id: string }[]> {
  const holder = (column: string) => `(output->'${HOLDER_KEY}'->>'${column}')`;
  const result = await db.executeSql(
    `WITH dead AS (
        SELECT name, id, retry_count < retry_limit AS retry FROM ${schema}.job
        WHERE name = ANY($1::text[]) AND state = 'active' AND output ? $2
          AND ${holderGoneSql(`${holder('pid')}::int`, `${holder('start')}::timestamptz`)}
        FOR UPDATE SKIP LOCKED),
      retried AS (
        UPDATE ${schema}.job j SET state = 'retry', start_after = now(), output = NULL
        FROM dead WHERE dead.retry AND j.name = dead.name AND j.id = dead.id)
      SELECT name, id FROM dead WHERE NOT retry`,
    [names, HOLDER_KEY],
  );
  return result.rows as { name: string; id: string }[];
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
