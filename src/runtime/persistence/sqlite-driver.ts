/**
 * better-sqlite3, loaded on first use: a server on PostgreSQL never loads the SQLite driver (14
 * modules and a native addon) although the runtime's barrel exports the SQLite store. The
 * driver is CommonJS, so `require` keeps opening a store synchronous.
 */
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';

let driver: typeof Database | undefined;

/** The better-sqlite3 module (its `Database` constructor, with `SqliteError` on it). */
export function sqliteDriver(): typeof Database {
  driver ??= createRequire(import.meta.url)('better-sqlite3') as typeof Database;
  return driver;
}
