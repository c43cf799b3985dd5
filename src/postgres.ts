/**
 * `machine-routes/postgres`: the PostgreSQL store and its pg-boss job queue, for code that builds
 * them itself. `openStore('postgres://…')` and `MachineRuntime.open` load these on demand, so a
 * server on SQLite never loads `pg` or `pg-boss` (optional peers).
 */
export { PostgresStore, type PostgresStoreOptions } from './runtime/persistence/postgres-store.js';
export { PgBossJobQueue, type PgBossJobQueueOptions } from './runtime/jobs/pg-boss-job-queue.js';
