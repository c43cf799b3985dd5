/**
 * The stores a bench runs on, each made for the run and removed after it: a SQLite file in a
 * temp dir, and a schema of its own in the PostgreSQL database at `pgUrl` (skipped, saying so,
 * when that server does not answer).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Runs `run` on the URL of a fresh SQLite file, deleted afterwards. */
export async function onSqliteFile(
  name: string,
  run: (url: string) => Promise<unknown>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `mr-bench-${name}-`));
  try {
    await run(`sqlite:${join(dir, 'bench.db')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `run` on the URL of a fresh schema of `pgUrl`'s database, dropped afterwards. */
export async function onPostgresSchema(
  pgUrl: string,
  name: string,
  run: (url: string) => Promise<unknown>,
): Promise<void> {
  const admin = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    console.log(`\nPostgreSQL skipped: ${pgUrl} unreachable.`);
    return;
  }
  const schema = `mr_bench_${name}_${process.pid}`;
  await admin.query(`CREATE SCHEMA "${schema}"`);
  try {
    const url = new URL(pgUrl);
    url.searchParams.set('schema', schema);
    await run(url.toString());
  } finally {
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
  }
}
