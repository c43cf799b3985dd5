/**
 * A handler's side effect, observable from every process: one row per job id in a table with a
 * unique key. A second run of the same job cannot add a row; it is written to a duplicates
 * table instead, so a test can count both. Each run records its attempt number: two runs with
 * one attempt number would be one claim run twice (never allowed), while a later attempt is a
 * re-run after the earlier attempt's lease expired (at-least-once delivery).
 */
import Database from 'better-sqlite3';
import pg from 'pg';

/** Counts after a run. */
export interface RecorderSummary {
  runs: number;
  duplicates: number;
  /** (job, attempt) pairs run more than once: one claim handed out twice. */
  attemptClashes: number;
  /** Distinct jobs run. */
  jobs: number;
  /** Runs per worker label. */
  byWorker: Record<string, number>;
}

/** The side-effect tables in the database of a store URL. */
export interface Recorder {
  /** Creates the tables (idempotent). */
  setUp(): Promise<void>;
  record(jobId: string, worker: string, attempt?: number): Promise<'recorded' | 'duplicate'>;
  summary(): Promise<RecorderSummary>;
  close(): Promise<void>;
}

const TABLES = [
  'CREATE TABLE IF NOT EXISTS test_job_runs (job_id TEXT PRIMARY KEY, worker TEXT NOT NULL, attempt INTEGER NOT NULL)',
  'CREATE TABLE IF NOT EXISTS test_job_duplicates (job_id TEXT NOT NULL, worker TEXT NOT NULL, attempt INTEGER NOT NULL)',
];

const CLASHES = `SELECT count(*) AS n FROM (SELECT job_id, attempt FROM
  (SELECT job_id, attempt FROM test_job_runs UNION ALL SELECT job_id, attempt FROM test_job_duplicates) AS runs
  GROUP BY job_id, attempt HAVING count(*) > 1) AS clashes`;

/** Opens the recorder on a `sqlite:<file>` or `postgres://...?schema=` URL. */
export function openRecorder(url: string): Recorder {
  return url.startsWith('sqlite:')
    ? sqliteRecorder(url.slice('sqlite:'.length))
    : postgresRecorder(url);
}

function sqliteRecorder(filename: string): Recorder {
  const db = new Database(filename, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  return {
    async setUp() {
      for (const sql of TABLES) db.exec(sql);
    },
    async record(jobId, worker, attempt = 0) {
      try {
        db.prepare('INSERT INTO test_job_runs (job_id, worker, attempt) VALUES (?, ?, ?)').run(
          jobId,
          worker,
          attempt,
        );
        return 'recorded';
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw error;
        db.prepare(
          'INSERT INTO test_job_duplicates (job_id, worker, attempt) VALUES (?, ?, ?)',
        ).run(jobId, worker, attempt);
        return 'duplicate';
      }
    },
    async summary() {
      const rows = db
        .prepare('SELECT worker, count(*) AS n FROM test_job_runs GROUP BY worker')
        .all() as {
        worker: string;
        n: number;
      }[];
      const duplicates = db
        .prepare('SELECT count(*) FROM test_job_duplicates')
        .pluck()
        .get() as number;
      const clashes = (db.prepare(CLASHES).get() as { n: number }).n;
      return summarize(rows, duplicates, clashes);
    },
    async close() {
      db.close();
    },
  };
}

function postgresRecorder(url: string): Recorder {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  const pool = new pg.Pool({
    connectionString: parsed.toString(),
    max: 2,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  return {
    async setUp() {
      for (const sql of TABLES) await pool.query(sql);
    },
    async record(jobId, worker, attempt = 0) {
      try {
        await pool.query(
          'INSERT INTO test_job_runs (job_id, worker, attempt) VALUES ($1, $2, $3)',
          [jobId, worker, attempt],
        );
        return 'recorded';
      } catch (error) {
        if ((error as { code?: string }).code !== '23505') throw error;
        await pool.query(
          'INSERT INTO test_job_duplicates (job_id, worker, attempt) VALUES ($1, $2, $3)',
          [jobId, worker, attempt],
        );
        return 'duplicate';
      }
    },
    async summary() {
      const rows = await pool.query<{ worker: string; n: number }>(
        'SELECT worker, count(*)::int AS n FROM test_job_runs GROUP BY worker',
      );
      const duplicates = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM test_job_duplicates',
      );
      const clashes = await pool.query<{ n: number }>(
        CLASHES.replace('count(*) AS n', 'count(*)::int AS n'),
      );
      return summarize(rows.rows, duplicates.rows[0]!.n, clashes.rows[0]!.n);
    },
    async close() {
      await pool.end();
    },
  };
}

function summarize(
  rows: { worker: string; n: number }[],
  duplicates: number,
  attemptClashes: number,
): RecorderSummary {
  const byWorker: Record<string, number> = {};
  let runs = 0;
  for (const row of rows) {
    byWorker[row.worker] = row.n;
    runs += row.n;
  }
  return { runs, duplicates, attemptClashes, jobs: runs, byWorker };
}
