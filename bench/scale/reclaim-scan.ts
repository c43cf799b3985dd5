/**
 * The pg-boss backend's dead-worker reclaim (`returnAbandoned`, run by every worker at most once
 * a second) against a queue holding many completed jobs, as pg-boss keeps them in its `job`
 * table for 12 hours: `npx tsx bench/scale/reclaim-scan.ts [completed jobs, default 200000]`.
 *
 * Opens a PgBossJobQueue on a schema of its own (which makes the partial index of active jobs,
 * `ACTIVE_JOBS_INDEX`), creates one queue, writes that many completed jobs and 10 active ones
 * claimed by this process's live holder straight into the queue's partition, and times the reclaim
 * statement itself (`EXPLAIN ANALYZE`: server execution time, nothing is reclaimed) with the
 * index and without it, alternating (the index dropped and built again between rounds; the build
 * is timed too). Prints medians and the plans. Needs PostgreSQL (BENCH_PG_URL, default the test
 * database).
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { PgBossJobQueue } from '../../src/runtime/jobs/pg-boss-job-queue.js';
import { ACTIVE_JOBS_INDEX, returnAbandonedSql } from '../../src/runtime/jobs/pg-boss-job-table.js';

const URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const COMPLETED = Number(process.argv[2] ?? 200_000);
const ROUNDS = 5;
const RUNS = 15;
const schema = `bench_reclaim_${process.pid}`;
const QUEUE = 'bench.reclaim';

const pool = new pg.Pool({ connectionString: URL });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
console.log(
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')} at start`,
);
const queue = await PgBossJobQueue.open({ connectionString: URL, schema });
try {
  await queue.enqueue({ name: QUEUE, payload: {} });
  const { rows } = await pool.query<{ pid: number; start: string }>(
    `SELECT pid, backend_start::text AS start FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
  );
  const holder = { machineRoutesHolder: rows[0] };
  await pool.query(
    `INSERT INTO ${schema}.job (name, id, state, data, started_on, completed_on, output)
      SELECT $1, gen_random_uuid(), 'completed', '{"json":"{}","key":null}', now(), now(), '{}'
      FROM generate_series(1, $2)`,
    [QUEUE, COMPLETED],
  );
  await pool.query(
    `INSERT INTO ${schema}.job (name, id, state, data, started_on, output)
      SELECT $1, gen_random_uuid(), 'active', '{"json":"{}","key":null}', now(), $2
      FROM generate_series(1, 10)`,
    [QUEUE, JSON.stringify(holder)],
  );
  await pool.query(`ANALYZE ${schema}.job`);

  const reclaim = async (): Promise<{ ms: number; plan: string }> => {
    let plan = '';
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const result = await pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${returnAbandonedSql(schema)}`, [
        [QUEUE],
        'machineRoutesHolder',
      ]);
      plan = result.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      times.push(Number(/Execution Time: ([\d.]+)/.exec(plan)![1]));
    }
    return { ms: median(times), plan };
  };
  const withIndex: number[] = [];
  const without: number[] = [];
  const builds: number[] = [];
  let plans = { with: '', without: '' };
  for (let round = 0; round < ROUNDS; round++) {
    const indexed = await reclaim();
    withIndex.push(indexed.ms);
    await pool.query(`DROP INDEX ${schema}.${ACTIVE_JOBS_INDEX}`);
    const scanned = await reclaim();
    without.push(scanned.ms);
    plans = { with: indexed.plan, without: scanned.plan };
    const started = performance.now();
    await pool.query(
      `CREATE INDEX ${ACTIVE_JOBS_INDEX} ON ${schema}.job (name) WHERE state = 'active'`,
    );
    builds.push(performance.now() - started);
  }
  console.log(`plan with the index:\n${plans.with}\n\nplan without it:\n${plans.without}\n`);
  console.log(
    `${COMPLETED} completed + 10 active jobs, ${ROUNDS} rounds x ${RUNS} runs, server execution ms (median of round medians):\n` +
      `  with ${ACTIVE_JOBS_INDEX}: ${median(withIndex).toFixed(3)} (${withIndex.map((n) => n.toFixed(3)).join(' ')})\n` +
      `  without it:   ${median(without).toFixed(3)} (${without.map((n) => n.toFixed(2)).join(' ')})\n` +
      `  index build:  ${median(builds).toFixed(1)} ms (${builds.map((n) => n.toFixed(0)).join(' ')})`,
  );
} finally {
  await queue.close();
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
  console.log(
    `load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')} at end`,
  );
}
