/**
 * vitest global setup: builds dist/ (incrementally: the config loader links the configs it
 * loads against the built package, and the package tests install it), then makes sure the
 * PostgreSQL test database exists (connecting to the
 * `postgres` maintenance database to create it). A server that does not answer is reported here
 * once; each PostgreSQL test file then skips or fails (see test/support/postgres.ts).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PG_TEST_URL, POSTGRES_REQUIRED } from './support/postgres.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `npm run build`, without npm's start-up cost. */
function build(): void {
  const run = (script: string, ...args: string[]) =>
    execFileSync(process.execPath, [script, ...args], { cwd: ROOT, stdio: 'inherit' });
  run('scripts/build.js');
}

export default async function setup(): Promise<void> {
  build();
  const target = new URL(PG_TEST_URL);
  const database = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(PG_TEST_URL);
  admin.pathname = '/postgres';
  const client = new pg.Client({
    connectionString: admin.toString(),
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
  } catch (error) {
    const message = `PostgreSQL at ${admin.host} is unreachable: ${(error as Error).message}`;
    if (POSTGRES_REQUIRED) throw new Error(`${message} (MACHINE_ROUTES_REQUIRE_POSTGRES=1)`);
    console.warn(`\n!!! ${message}; PostgreSQL tests will be SKIPPED.\n`);
    return;
  }
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
      } catch (error) {
        // Another run created it in the meantime (42P04 duplicate_database): fine.
        if ((error as { code?: string }).code !== '42P04') throw error;
      }
    }
  } finally {
    await client.end();
  }
}
