/**
 * Store selection by URL, and the `migrate(url)` entry point of `machine-routes migrate`.
 *
 * | URL | Store |
 * |---|---|
 * | `sqlite:./path.db`, `sqlite:/abs/path.db` | SQLite file (created and migrated on open) |
 * | `sqlite::memory:` | SQLite in memory (migrated on open) |
 * | `memory:` | `MemoryStore` |
 * | `postgres://...`, `postgresql://...` | PostgreSQL; `?schema=name` selects the schema |
 *
 * SQLite URLs take `?synchronous=normal|full`.
 */
import { MemoryStore } from './memory-store.js';
import { SqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

/** A parsed store URL. */
export type StoreLocation =
  | { kind: 'memory' }
  | { kind: 'sqlite'; filename: string; synchronous: 'NORMAL' | 'FULL' }
  | { kind: 'postgres'; connectionString: string; schema: string | undefined };

/** Options of `openStore`. */
export interface OpenStoreOptions {
  /**
   * Run pending migrations on open. Default: true for SQLite (the embedded store migrates on first
   * use), false for PostgreSQL (run `machine-routes migrate` once per deployment).
   */
  migrate?: boolean;
}

/**
 * Parses a store URL. Throws an `Error` naming the accepted forms when the URL is not one of
 * them (used by `loadRuntimeConfig` to reject bad configuration early).
 */
export function parseStoreUrl(url: string): StoreLocation {
  if (url === 'memory:') return { kind: 'memory' };
  if (url.startsWith('sqlite:')) {
    const [rest = '', query = ''] = url.slice('sqlite:'.length).split('?', 2);
    const params = new URLSearchParams(query);
    const synchronous = (params.get('synchronous') ?? 'normal').toUpperCase();
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      throw new Error(`Invalid store URL '${url}': synchronous must be 'normal' or 'full'.`);
    }
    // `sqlite://path` is accepted as a courtesy and means the same as `sqlite:path`.
    const filename = rest.startsWith('//') ? rest.slice(2) : rest;
    if (filename === '')
      throw new Error(`Invalid store URL '${url}': no file name after 'sqlite:'.`);
    return { kind: 'sqlite', filename, synchronous };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`Invalid store URL '${url}': not a valid PostgreSQL connection URL.`);
    }
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    return { kind: 'postgres', connectionString: parsed.toString(), schema };
  }
  throw new Error(
    `Invalid store URL '${url}': expected 'sqlite:<file>', 'sqlite::memory:', 'memory:', ` +
      `or 'postgres://user@host:port/database'.`,
  );
}

/** Opens the store a URL names (see the table above). */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const location = parseStoreUrl(url);
  switch (location.kind) {
    case 'memory':
      return new MemoryStore();
    case 'sqlite':
      return new SqliteStore({
        filename: location.filename,
        synchronous: location.synchronous,
        migrate: options.migrate ?? true,
      });
    case 'postgres': {
      const { PostgresStore } = await importPostgres(() => import('./postgres-store.js'));
      const store = new PostgresStore({
        connectionString: location.connectionString,
        schema: location.schema,
      });
      if (options.migrate === true) {
        try {
          await store.migrate();
        } catch (error) {
          await store.close();
          throw error;
        }
      }
      return store;
    }
  }
}

/** Brings the database at `url` to the latest schema version, then closes it. */
export async function migrate(url: string): Promise<void> {
  const store = await openStore(url, { migrate: false });
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
}

/**
 * Imports a PostgreSQL module on first use, so servers on SQLite never load `pg` or `pg-boss`
 * (optional peer dependencies). A missing driver is named with the command that installs it.
 */
export async function importPostgres<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missing = /Cannot find (?:package|module) '(pg|pg-boss)'/.exec(String(error));
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && missing !== null) {
      throw new Error(
        `PostgreSQL stores need the '${missing[1]}' package, which is not installed: run npm install pg pg-boss.`,
        { cause: error },
      );
    }
    throw error;
  }
}
