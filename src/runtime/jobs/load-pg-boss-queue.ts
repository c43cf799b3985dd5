/**
 * The pg-boss job queue, loaded on first use of a PostgreSQL URL; a module of its own for the
 * reason of persistence/load-postgres-store.ts.
 */
export const loadPgBossQueue = () => import('./pg-boss-job-queue.js');
