/**
 * PostgreSQL for tests. Each test file works in its own schema (`createTestSchema`), so files
 * running in parallel never see each other's rows, and drops it afterwards.
 *
 * When no server answers, PostgreSQL tests are skipped with a loud warning, unless
 * MACHINE_ROUTES_REQUIRE_POSTGRES=1 (set by .ci/run): then they run and fail.
 */
import pg from 'pg';

/** Base URL of the test database. */
export const PG_TEST_URL =
  process.env.MACHINE_ROUTES_TEST_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';

/** True when CI demands PostgreSQL: a missing server fails instead of skipping. */
export const POSTGRES_REQUIRED = process.env.MACHINE_ROUTES_REQUIRE_POSTGRES === '1';

let probe: Promise<string | null> | undefined;

/** `null` when the test database answers, else why not. Probed once per process. */
export function postgresUnavailableReason(): Promise<string | null> {
  probe ??= (async () => {
    const client = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return null;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return probe;
}

/**
 * Whether PostgreSQL tests should run in this file: true when the server answers or when it is
 * required (so the tests fail loudly); false, with a warning, otherwise.
 */
export async function shouldRunPostgresTests(file: string): Promise<boolean> {
  const reason = await postgresUnavailableReason();
  if (reason === null || POSTGRES_REQUIRED) return true;
  console.warn(
    `\n!!! PostgreSQL tests SKIPPED in ${file}: ${PG_TEST_URL} is unreachable (${reason}).\n` +
      `!!! Start PostgreSQL (.ci/ensure-postgres) or set MACHINE_ROUTES_REQUIRE_POSTGRES=1 to make this a failure.\n`,
  );
  return false;
}

/** A schema of its own for one test file. */
export interface TestSchema {
  /** Store URL (`postgres://...?schema=<name>`). */
  url: string;
  schema: string;
  /** Drops the schema and everything in it. */
  drop(): Promise<void>;
}

/** Creates a fresh, empty schema named after `prefix` plus a random suffix. */
export async function createTestSchema(prefix: string): Promise<TestSchema> {
  const schema =
    `mrt_${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${Math.random()
      .toString(36)
      .slice(2, 8)}`.slice(0, 63);
  await adminQuery(`CREATE SCHEMA "${schema}"`);
  const url = new URL(PG_TEST_URL);
  url.searchParams.set('schema', schema);
  return {
    url: url.toString(),
    schema,
    drop: () => adminQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
  };
}

/** Drops a schema made beside a test schema (e.g. pg-boss's `<schema>_jobs`), if it exists. */
export function dropSchema(name: string): Promise<void> {
  return adminQuery(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
}

/** Runs one statement as the admin connection of the test database. */
export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
