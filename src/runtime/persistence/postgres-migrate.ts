/** Schema migrations of a PostgreSQL store: apply, list pending, list applied. */
import type pg from 'pg';
import { SCHEMA_MIGRATIONS_DDL, pendingMigrations, type Migration } from './migrations.js';

/** Applies the pending migrations under a per-schema advisory lock, creating the schema. */
export async function migratePostgres(pool: pg.Pool, schema: string | undefined): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Serializes concurrent migrators (several app processes starting at once) per schema.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `machine_routes.migrate.${schema ?? ''}`,
    ]);
    if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(SCHEMA_MIGRATIONS_DDL.postgres);
    const applied = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    for (const migration of pendingMigrations(applied.rows.map((row) => row.version))) {
      await client.query(migration.postgres);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Migrations this version needs that the database lacks (all of them on a fresh schema). */
export async function postgresPendingMigrations(pool: pg.Pool): Promise<Migration[]> {
  try {
    return pendingMigrations(await postgresAppliedMigrations(pool));
  } catch (error) {
    // 42P01: no schema_migrations table, nothing was ever migrated here.
    if ((error as { code?: unknown }).code === '42P01') return pendingMigrations([]);
    throw error;
  }
}

/** Versions recorded in `schema_migrations`. */
export async function postgresAppliedMigrations(pool: pg.Pool): Promise<number[]> {
  const result = await pool.query<{ version: number }>(
    'SELECT version FROM schema_migrations ORDER BY version',
  );
  return result.rows.map((row) => row.version);
}
