/** Schema migrations of a SQLite store: apply, list applied. */
import type Database from 'better-sqlite3';
import { SCHEMA_MIGRATIONS_DDL, pendingMigrations } from './migrations.js';

/** Applies pending migrations in one immediate transaction (other processes wait). */
export function migrateSqlite(db: Database.Database): void {
  db.transaction(() => {
    db.exec(SCHEMA_MIGRATIONS_DDL.sqlite);
    const applied = db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[];
    const record = db.prepare(
      'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
    );
    for (const migration of pendingMigrations(applied)) {
      db.exec(migration.sqlite);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
  }).immediate();
}

/** Versions recorded in `schema_migrations`. */
export function sqliteAppliedMigrations(db: Database.Database): number[] {
  return db
    .prepare('SELECT version FROM schema_migrations ORDER BY version')
    .pluck()
    .all() as number[];
}
