/**
 * Queue selection: the same URLs as `openStore`, or an open store whose connection the queue
 * then shares.
 *
 * | Target | Queue |
 * |---|---|
 * | `memory:`, `sqlite::memory:`, a `MemoryStore` | `EmbeddedJobQueue` on a private in-memory database (not durable) |
 * | `sqlite:<file>`, a `SqliteStore` | `EmbeddedJobQueue` on the store's file (migrated on open) |
 * | `postgres://...?schema=s`, a `PostgresStore` | `PgBossJobQueue`, pg-boss schema `<s>_jobs` (or `pgboss` without a schema) |
 */
import { importPostgres, parseStoreUrl } from '../persistence/open-store.js';
import { loadPgBossQueue } from './load-pg-boss-queue.js';
import type { PostgresStore } from '../persistence/postgres-store.js';
import { SqliteStore } from '../persistence/sqlite-store.js';
import type { Store } from '../persistence/store.js';
import { EmbeddedJobQueue } from './embedded-job-queue.js';
import type { DurableJobQueue, DurableJobQueueOptions } from './types.js';

/** Options of `openJobQueue`. */
export interface OpenJobQueueOptions extends DurableJobQueueOptions {
  /** pg-boss schema on PostgreSQL (default: the store schema + `_jobs`, else `pgboss`). */
  jobSchema?: string;
}

/**
 * Opens the durable queue for a store URL or an open store (see the table above). A queue
 * opened from a URL owns its connection and closes it on `close()`; one opened from a store
 * shares the store's connection and leaves it open.
 */
export async function openJobQueue(
  target: string | Store,
  options: OpenJobQueueOptions = {},
): Promise<DurableJobQueue> {
  const { jobSchema, ...rest } = options;
  if (typeof target !== 'string') return openForStore(target, jobSchema, rest);
  const location = parseStoreUrl(target);
  switch (location.kind) {
    case 'memory':
      return EmbeddedJobQueue.inMemory(rest);
    case 'sqlite': {
      if (location.filename === ':memory:') return EmbeddedJobQueue.inMemory(rest);
      const store = new SqliteStore({
        filename: location.filename,
        synchronous: location.synchronous,
      });
      return new EmbeddedJobQueue({ ...rest, database: store.database, closeDatabase: true });
    }
    case 'postgres': {
      const { PgBossJobQueue } = await importPgBoss();
      return PgBossJobQueue.open({
        ...rest,
        connectionString: location.connectionString,
        schema: jobSchema ?? defaultJobSchema(location.schema),
      });
    }
  }
}

async function openForStore(
  store: Store,
  jobSchema: string | undefined,
  options: DurableJobQueueOptions,
): Promise<DurableJobQueue> {
  if (store instanceof SqliteStore)
    return new EmbeddedJobQueue({ ...options, database: store.database });
  if (store.kind === 'postgres') {
    const { PgBossJobQueue } = await importPgBoss();
    const postgres = store as PostgresStore;
    // pg-boss gets connections of its own on the same database (the outbox still applies).
    // Sharing the store's pool deadlocks under load: every store client can be inside a commit
    // whose outbox awaits pg-boss (creating a queue), which then waits for a free store client.
    return PgBossJobQueue.open({
      ...options,
      connectionString: postgres.connectionString,
      schema: jobSchema ?? defaultJobSchema(postgres.schema),
    });
  }
  // MemoryStore and any other in-process store: nothing durable to share.
  return EmbeddedJobQueue.inMemory(options);
}

/** The pg-boss schema beside a store schema. */
export function defaultJobSchema(storeSchema: string | undefined): string {
  return storeSchema === undefined ? 'pgboss' : `${storeSchema}_jobs`;
}

/** pg-boss's queue, loaded only by deployments on PostgreSQL. */
function importPgBoss(): Promise<typeof import('./pg-boss-job-queue.js')> {
  return importPostgres(loadPgBossQueue);
}
