/**
 * The pg-boss backend's dead-worker reclaim reads active jobs through an index, not every job
 * of its queues: pg-boss keeps completed jobs in its `job` table for 12 hours, and every worker
 * runs the reclaim once a second (docs/persistence.md "Jobs"). Opening the queue makes the
 * partial index when it is missing (an upgraded schema), on queues created before and after, and
 * two workers opening at once both start. On PostgreSQL.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBossJobQueue } from '../../../src/runtime/jobs/pg-boss-job-queue.js';
import {
  ACTIVE_JOBS_INDEX,
  returnAbandonedSql,
} from '../../../src/runtime/jobs/pg-boss-job-table.js';
import {
  createTestSchema,
  dropSchema,
  PG_TEST_URL,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';

const runPostgres = await shouldRunPostgresTests('jobs/pg-boss-active-index');

describe.runIf(runPostgres)('pg-boss reclaim of dead workers’ jobs', () => {
  let base: TestSchema;
  let pool: pg.Pool;
  const schemas: string[] = [];
  const jobsSchema = (suffix: string) => {
    const name = `${base.schema}_${suffix}`.slice(0, 63);
    schemas.push(name);
    return name;
  };

  beforeAll(async () => {
    base = await createTestSchema('pg_boss_active_index');
    pool = new pg.Pool({ connectionString: PG_TEST_URL });
  });
  afterAll(async () => {
    await pool.end();
    for (const schema of schemas) await dropSchema(schema);
    await base.drop();
  });

  const indexExists = async (schema: string) =>
    (
      await pool.query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [
        `${schema}.${ACTIVE_JOBS_INDEX}`,
      ])
    ).rows[0]!.found;

  /** The reclaim's plan over `names`, each queue holding 5,000 completed jobs and one active. */
  const reclaimPlan = async (schema: string, names: string[]) => {
    for (const name of names) {
      await pool.query(
        `INSERT INTO ${schema}.job (name, id, state, data, started_on, completed_on, output)
          SELECT $1, gen_random_uuid(), 'completed', '{"json":"{}","key":null}', now(), now(), '{}'
          FROM generate_series(1, 5000)`,
        [name],
      );
      await pool.query(
        `INSERT INTO ${schema}.job (name, id, state, data, started_on, output)
          VALUES ($1, gen_random_uuid(), 'active', '{"json":"{}","key":null}', now(),
            '{"machineRoutesHolder":{"pid":1,"start":"2026-01-01T00:00:00Z"}}')`,
        [name],
      );
    }
    await pool.query(`ANALYZE ${schema}.job`);
    const { rows } = await pool.query(`EXPLAIN ${returnAbandonedSql(schema)}`, [
      names,
      'machineRoutesHolder',
    ]);
    return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
  };

  it('should read active jobs of every queue through the index, not scan all their jobs', async () => {
    const schema = jobsSchema('a');
    const queue = await PgBossJobQueue.open({ connectionString: PG_TEST_URL, schema });
    try {
      await queue.enqueue({ name: 'reclaim.first', payload: {} });
      await queue.enqueue({ name: 'reclaim.second', payload: {} });
      const plan = await reclaimPlan(schema, ['reclaim.first', 'reclaim.second']);
      expect(plan).not.toMatch(/Seq Scan/);
      expect(plan.match(/Index Scan using \S+ on j[0-9a-f]+ job/g)).toHaveLength(2);
      expect(await indexExists(schema)).toBe(true);
    } finally {
      await queue.close();
    }
  });

  it('should make the index when an existing schema lacks it, and start two workers at once', async () => {
    const schema = jobsSchema('b');
    const first = await PgBossJobQueue.open({ connectionString: PG_TEST_URL, schema });
    await first.enqueue({ name: 'reclaim.old', payload: {} });
    await first.close();
    // The schema as a worker of the version before left it.
    await pool.query(`DROP INDEX ${schema}.${ACTIVE_JOBS_INDEX}`);
    expect(await indexExists(schema)).toBe(false);

    const workers = await Promise.all([
      PgBossJobQueue.open({ connectionString: PG_TEST_URL, schema }),
      PgBossJobQueue.open({ connectionString: PG_TEST_URL, schema }),
    ]);
    try {
      expect(await indexExists(schema)).toBe(true);
      expect(await reclaimPlan(schema, ['reclaim.old'])).not.toMatch(/Seq Scan/);
    } finally {
      for (const worker of workers) await worker.close();
    }
  });
});
