/**
 * Store selection by URL, and the `migrate(url)` and `migrationStatus(url)` entry points of
 * `machine-routes migrate`.
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
import { existsSync } from 'node:fs';
import {
  MissingPeerDependencyException,
  StoreBehindPoolerException,
  StoreNotMigratedException,
  StoreUnreachableException,
} from '../errors.js';
import { MemoryStore } from './memory-store.js';
import { MIGRATIONS, pendingMigrations, type Migration } from './migrations.js';
import { sqliteDriver } from './sqlite-driver.js';
import { SqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';
import { parseStoreUrl, redactStoreUrl } from '../store-url.js';
import type { PostgresStore } from './postgres-store.js';
import { loadPostgresStore } from './load-postgres-store.js';

export { parseStoreUrl, type StoreLocation } from '../store-url.js';

/** Options of `openStore`. */
export interface OpenStoreOptions {
  /**
   * Run pending migrations on open. Default: true for SQLite (the embedded store migrates on first
   * use), false for PostgreSQL (run `machine-routes migrate` once per deployment).
   */
  migrate?: boolean;
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
      const { PostgresStore } = await importPostgres(loadPostgresStore);
      const store = new PostgresStore({
        connectionString: location.connectionString,
        schema: location.schema,
      });
      if (options.migrate === true) {
        try {
          // Before the migration writes anything: behind a transaction pooler it would succeed
          // (and, without the refused ?schema=, in the role's default schema) and the server fail.
          await assertSessionConnections(store);
          await store.migrate();
        } catch (error) {
          await store.close();
          throw unreachable(error, store);
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
  } catch (error) {
    throw store.kind === 'postgres' ? unreachable(error, store as PostgresStore) : error;
  } finally {
    await store.close();
  }
}

/** The schema versions a store has and lacks, as `machine-routes migrate status` lists them. */
export interface MigrationStatus {
  /** Recorded in `schema_migrations`, in order (a version unknown to this one keeps no name). */
  applied: { version: number; name: string | null }[];
  /** This version's migrations the store lacks, in order. */
  pending: Migration[];
}

/**
 * Reads which migrations the store at `url` has, changing nothing: a SQLite file that does not
 * exist is not created (every migration is pending), and `memory:` has no schema.
 */
export async function migrationStatus(url: string): Promise<MigrationStatus> {
  const location = parseStoreUrl(url);
  let applied: number[];
  switch (location.kind) {
    case 'memory':
      return { applied: [], pending: [] };
    case 'sqlite':
      applied = sqliteAppliedVersions(location.filename);
      break;
    case 'postgres': {
      const { PostgresStore } = await importPostgres(loadPostgresStore);
      const { connectionString, schema } = location;
      const store = new PostgresStore({ connectionString, schema });
      try {
        applied = await store.appliedMigrations();
      } catch (error) {
        // 42P01: no schema_migrations table, nothing was ever migrated here.
        if ((error as { code?: unknown }).code !== '42P01') throw unreachable(error, store);
        applied = [];
      } finally {
        await store.close();
      }
    }
  }
  const names = new Map(MIGRATIONS.map((migration) => [migration.version, migration.name]));
  return {
    applied: applied.map((version) => ({ version, name: names.get(version) ?? null })),
    pending: pendingMigrations(applied),
  };
}

/** Versions in a SQLite file's `schema_migrations`, read only; none when there is no file. */
function sqliteAppliedVersions(filename: string): number[] {
  if (filename === ':memory:' || !existsSync(filename)) return [];
  const Database = sqliteDriver();
  const db = new Database(filename, { readonly: true, fileMustExist: true });
  try {
    const table = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    if (table === undefined) return [];
    return db
      .prepare('SELECT version FROM schema_migrations ORDER BY version')
      .pluck()
      .all() as number[];
  } finally {
    db.close();
  }
}

/**
 * Refuses a PostgreSQL store whose schema lacks migrations this version needs
 * ({@link StoreNotMigratedException}, naming them and the command to run). PostgreSQL is migrated
 * once per deployment, not on open: a runtime or worker started before that would fail every
 * request and sweep with "relation does not exist". Other stores migrate themselves: no-op.
 */
export async function assertMigrated(store: Store): Promise<void> {
  if (store.kind !== 'postgres') return;
  const postgres = store as PostgresStore;
  const pending = await postgres.pendingMigrations().catch((error: unknown) => {
    throw unreachable(error, postgres);
  });
  if (pending.length === 0) return;
  const shown = shownUrl(postgres);
  const versions = pending.map((migration) => `${migration.version} ${migration.name}`);
  throw new StoreNotMigratedException(
    `The PostgreSQL database '${shown}' lacks ${pending.length} migration(s) this version of ` +
      `machine-routes needs (${versions.join(', ')}): run 'machine-routes migrate --database ` +
      `${shown}' once per deployment before starting servers and workers, or open the runtime ` +
      `with migrate: true.`,
    { key: shown, pending: pending.map((migration) => migration.version) },
  );
}

/**
 * Refuses a PostgreSQL store reached through a pooler in transaction or statement mode
 * ({@link StoreBehindPoolerException}): its named statements would fail on other server
 * connections ("prepared statement ... already exists"), live state would listen on a connection
 * that moves, and lock rows would name a backend that outlives the process or is closed under
 * it. Checked when a runtime or worker starts; other stores: no-op.
 */
export async function assertSessionConnections(store: Store): Promise<void> {
  if (store.kind !== 'postgres') return;
  const postgres = store as PostgresStore;
  const shares = await postgres.sharesSessions().catch((error: unknown) => {
    throw unreachable(error, postgres);
  });
  if (!shares) return;
  const shown = shownUrl(postgres);
  throw new StoreBehindPoolerException(
    `The PostgreSQL store '${shown}' is reached through a connection pooler that shares server ` +
      `connections between transactions (PgBouncer pool_mode = transaction or statement): ` +
      `machine-routes keeps session state (named prepared statements, LISTEN for live state, a ` +
      `holder connection its lock rows name). Point the URL at PostgreSQL itself, or at a pool ` +
      `in pool_mode = session (docs/scaling.md "PgBouncer").`,
    { key: shown },
  );
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
      // One of ours, so the CLI prints the line instead of a stack.
      const named = new MissingPeerDependencyException(
        `PostgreSQL stores need the '${missing[1]}' package, which is not installed: run npm install pg pg-boss.`,
        { key: missing[1] },
      );
      named.cause = error;
      throw named;
    }
    throw error;
  }
}

/** The store's URL as messages show it: its schema included, its password hidden. */
function shownUrl(store: PostgresStore): string {
  const url = new URL(store.connectionString);
  if (store.schema !== undefined) url.searchParams.set('schema', store.schema);
  return redactStoreUrl(url.toString());
}

/**
 * What to change for a connection-level failure, by the driver's code: PostgreSQL's SQLSTATE
 * (3D000 no such database, 28xxx login refused, 08xxx connection) or Node's socket errors.
 */
function unreachableHint(code: string, url: URL): string | undefined {
  const database = decodeURIComponent(url.pathname.slice(1)) || '(the user name)';
  const server = `${url.hostname || 'localhost'}:${url.port || '5432'}`;
  if (code === '3D000')
    return `the database '${database}' does not exist on ${server}: create it (createdb -h ${url.hostname || 'localhost'} -p ${url.port || '5432'} ${database}) or fix the database name in the URL`;
  if (code.startsWith('28'))
    return `the server at ${server} refused the login: check the user and password in the URL`;
  if (code.startsWith('08') || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT'].includes(code))
    return `no PostgreSQL server answered at ${server}: start it, or fix the host and port in the URL`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `the host '${url.hostname}' could not be resolved: fix the host in the URL`;
  return undefined;
}

/**
 * A {@link StoreUnreachableException} for a connection-level failure of `store`, naming the URL
 * (password hidden) and what to change; any other error is returned as it is.
 */
function unreachable(error: unknown, store: PostgresStore): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error;
  // PgBouncer refuses the `options` parameter that carries a `?schema=` URL's search_path.
  if (code === '08P01' && /unsupported startup parameter/.test((error as Error).message)) {
    const shown = shownUrl(store);
    return new StoreBehindPoolerException(
      `The PostgreSQL store '${shown}' is reached through a connection pooler that refuses the ` +
        `'options' startup parameter a ?schema= URL sends (${(error as Error).message}): point the ` +
        `URL at PostgreSQL itself, or drop ?schema= and give the role a search_path ` +
        `(ALTER ROLE ... SET search_path), in a pool in pool_mode = session (docs/scaling.md).`,
      { key: shown },
    );
  }
  const hint = unreachableHint(code, new URL(store.connectionString));
  if (hint === undefined) return error;
  const shown = shownUrl(store);
  return new StoreUnreachableException(
    `The PostgreSQL store '${shown}' cannot be used: ${hint} (${code}: ${(error as Error).message}).`,
    { key: shown, cause: code },
  );
}
