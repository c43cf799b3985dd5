/**
 * Versioned schema migrations, one SQL variant per dialect. Applied in order by each store's
 * `migrate()` and recorded in `schema_migrations`; a released migration is never edited, a
 * change is a new entry.
 *
 * The initial schema (version 1), its type choices and indexes: initial-schema.ts.
 */
import {
  HISTORY_ARCHIVE_POSTGRES,
  HISTORY_ARCHIVE_SQLITE,
  HISTORY_RETENTION_POSTGRES,
  HISTORY_RETENTION_SQLITE,
} from './history-retention.js';
import { FLOW_CONTROL_IDLE_POSTGRES, FLOW_CONTROL_TABLES_POSTGRES } from './flow-control.js';
import { HOLDER_GONE_FUNCTION_POSTGRES } from './holders.js';
import { INITIAL_SCHEMA_POSTGRES, INITIAL_SCHEMA_SQLITE } from './initial-schema.js';
import { IDEMPOTENCY_TABLE_POSTGRES, IDEMPOTENCY_TABLE_SQLITE } from './idempotency.js';
import { JOBS_LEASE_HOLDER_SQLITE, JOBS_TABLE_POSTGRES, JOBS_TABLE_SQLITE } from './job-schema.js';
import { TIMER_FAILURES_TABLE_POSTGRES, TIMER_FAILURES_TABLE_SQLITE } from './timer-failures.js';
import { WATCH_LEASES_POSTGRES } from './watch-leases.js';

/** One schema version. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

/** Migration 18, the same SQL on both stores (both take row-value comparisons). */
const UNIQUE_BUSINESS_KEY = `UPDATE machine_instances SET business_key = NULL
  WHERE business_key IS NOT NULL AND EXISTS (SELECT 1 FROM machine_instances older
    WHERE older.machine_id = machine_instances.machine_id
      AND older.business_key = machine_instances.business_key
      AND (older.created_at, older.root_event_id) < (machine_instances.created_at, machine_instances.root_event_id));
DROP INDEX machine_instances_business_key_idx;
CREATE UNIQUE INDEX machine_instances_business_key_uq ON machine_instances (machine_id, business_key)
  WHERE business_key IS NOT NULL;`;

/** Every migration, in version order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sqlite: INITIAL_SCHEMA_SQLITE,
    postgres: INITIAL_SCHEMA_POSTGRES,
  },
  // Child machines (delegation) keep their parent in the snapshot, for sendToParent and for the
  // parent's completion when they finish through their own events.
  {
    version: 2,
    name: 'machine instance parent',
    sqlite: `ALTER TABLE machine_instances ADD COLUMN parent_machine_id TEXT;
ALTER TABLE machine_instances ADD COLUMN parent_root_event_id TEXT;`,
    postgres: `ALTER TABLE machine_instances ADD COLUMN parent_machine_id text;
ALTER TABLE machine_instances ADD COLUMN parent_root_event_id text;`,
  },
  // The embedded job queue's table (jobs/schema.ts); PostgreSQL keeps jobs in pg-boss's schema.
  { version: 3, name: 'job queue', sqlite: JOBS_TABLE_SQLITE, postgres: JOBS_TABLE_POSTGRES },
  // Timers: a fire row belongs to one stay in its state (the entry time it was counted from),
  // so leaving and re-entering starts a fresh count without deleting rows on every commit.
  {
    version: 4,
    name: 'timer fire stay',
    sqlite: `ALTER TABLE machine_timer_fires ADD COLUMN state_entered_at TEXT;`,
    postgres: `ALTER TABLE machine_timer_fires ADD COLUMN state_entered_at timestamptz;`,
  },
  // Idempotency-Key records of command endpoints (persistence/idempotency.ts).
  {
    version: 5,
    name: 'idempotency keys',
    sqlite: IDEMPOTENCY_TABLE_SQLITE,
    postgres: IDEMPOTENCY_TABLE_POSTGRES,
  },
  // Every send writes and deletes a lock row (docs/persistence.md "Locks"): one B-tree instead
  // of three (SQLite: the primary key is the table; no expiry index on either backend). The
  // table only holds locks in use and the few a crash left, so the sweep's scan stays short.
  {
    version: 6,
    name: 'lean lock rows',
    sqlite: `CREATE TABLE machine_locks_lean (
  root_event_id TEXT PRIMARY KEY,
  owner_id      TEXT NOT NULL,
  acquired_at   TEXT NOT NULL,
  expires_at    TEXT NOT NULL,
  context       TEXT
) WITHOUT ROWID;
INSERT INTO machine_locks_lean SELECT root_event_id, owner_id, acquired_at, expires_at, context FROM machine_locks;
DROP TABLE machine_locks;
ALTER TABLE machine_locks_lean RENAME TO machine_locks;`,
    postgres: `DROP INDEX IF EXISTS machine_locks_expires_idx;`,
  },
  // A lock row needs no durability: a lost one only frees its instance early, and commits are
  // fenced on the sequence number. Unlogged, the short lock transaction writes no WAL and so
  // commits without waiting for a WAL flush (one fsync per event instead of two; after a
  // server crash the table is emptied, which frees every lock). SQLite's WAL commits do not
  // sync under `synchronous = NORMAL`, so it has nothing to change.
  {
    version: 7,
    name: 'unlogged lock rows',
    sqlite: `SELECT 1;`,
    postgres: `ALTER TABLE machine_locks SET UNLOGGED;`,
  },
  // Rows a process holds name it, so a taker frees them as soon as it is dead instead of after
  // their TTL (docs/persistence.md "Dead holders"): its process on SQLite (holders.ts),
  // its holder connection's backend on PostgreSQL (postgres-holder.ts). Nullable columns: rows
  // of processes not yet upgraded have none and keep the TTL. Jobs on PostgreSQL are pg-boss's
  // and keep their holder in its job row.
  {
    version: 8,
    name: 'dead holders',
    sqlite: `ALTER TABLE machine_locks ADD COLUMN holder TEXT;
ALTER TABLE machine_idempotency_keys ADD COLUMN holder TEXT;
${JOBS_LEASE_HOLDER_SQLITE}`,
    postgres: `ALTER TABLE machine_locks ADD COLUMN holder_pid integer, ADD COLUMN holder_start timestamptz;
ALTER TABLE machine_idempotency_keys ADD COLUMN holder_pid integer, ADD COLUMN holder_start timestamptz;`,
  },
  // The operator's reads (persistence/instance-queries.ts): the newest instances of a machine
  // without a scan, and an instance by its business key (a model record's key). Listing by
  // state uses the current-states index the timer sweep already has. The creation index is
  // written once per instance (created_at never changes); the key index only holds rows that
  // have a key.
  {
    version: 9,
    name: 'operator queries',
    sqlite: `ALTER TABLE machine_instances ADD COLUMN business_key TEXT;
CREATE INDEX machine_instances_created_idx ON machine_instances (machine_id, created_at, root_event_id);
CREATE INDEX machine_instances_business_key_idx ON machine_instances (machine_id, business_key)
  WHERE business_key IS NOT NULL;`,
    postgres: `ALTER TABLE machine_instances ADD COLUMN business_key text;
CREATE INDEX machine_instances_created_idx ON machine_instances (machine_id, created_at, root_event_id);
CREATE INDEX machine_instances_business_key_idx ON machine_instances (machine_id, business_key)
  WHERE business_key IS NOT NULL;`,
  },
  // The PostgreSQL holder test as a function the statements call (holders.ts): cheaper than the
  // same subquery inline on the common path, where no row is held. SQLite's is registered on
  // each connection.
  {
    version: 10,
    name: 'holder test function',
    sqlite: `SELECT 1;`,
    postgres: HOLDER_GONE_FUNCTION_POSTGRES,
  },
  // The version of the machine definition that last wrote each instance (docs/versioning.md):
  // the lazy migration and the version fence read it with the instance, in the same row. NULL
  // on rows written before: they count as the oldest version the machine names.
  {
    version: 11,
    name: 'instance definition version',
    sqlite: `ALTER TABLE machine_instances ADD COLUMN definition_version TEXT;`,
    postgres: `ALTER TABLE machine_instances ADD COLUMN definition_version text;`,
  },
  // The W3C trace context of the step that entered a state (JSON, null without a recording
  // span), so a timer fire hours later links to the trace of the event that armed it
  // (docs/operating.md). Written with the state row it belongs to: no extra statement.
  {
    version: 12,
    name: 'state trace context',
    sqlite: `ALTER TABLE machine_current_states ADD COLUMN trace_context TEXT;`,
    postgres: `ALTER TABLE machine_current_states ADD COLUMN trace_context json;`,
  },
  // The failed attempts at a timer fire whose behavior threw (timer-failures.ts): the sweep
  // waits between tries and gives the fire up after MACHINE_TIMER_TRIES of them, instead of
  // trying it at every sweep forever. A table of its own: a stay's first fire has no row in
  // machine_timer_fires to count on.
  {
    version: 13,
    name: 'timer failures',
    sqlite: TIMER_FAILURES_TABLE_SQLITE,
    postgres: TIMER_FAILURES_TABLE_POSTGRES,
  },
  // An operator's pause (docs/operations.md "Pause and resume"): set while the instance refuses
  // events and fires no timers. Nullable, written only by the pause and resume steps; the load
  // statements read it with the row they already read.
  {
    version: 14,
    name: 'instance pause',
    sqlite: `ALTER TABLE machine_instances ADD COLUMN paused_at TEXT;`,
    postgres: `ALTER TABLE machine_instances ADD COLUMN paused_at timestamptz;`,
  },
  // History retention (history-retention.ts): finished instances whose history the worker
  // deleted are marked, and a partial index lists the finished ones not yet swept, so a sweep
  // reads only instances it has work for. Written once per instance, when it finishes.
  {
    version: 15,
    name: 'history retention',
    sqlite: HISTORY_RETENTION_SQLITE,
    postgres: HISTORY_RETENTION_POSTGRES,
  },
  // The ETag of an Idempotency-Key's first answer (idempotency.ts), so its replay names the same
  // instance version. Nullable: answers without one, and records stored before, have none.
  {
    version: 16,
    name: 'idempotency response etag',
    sqlite: `ALTER TABLE machine_idempotency_keys ADD COLUMN response_etag TEXT;`,
    postgres: `ALTER TABLE machine_idempotency_keys ADD COLUMN response_etag text;`,
  },
  // Flow control of event routes (flow-control.ts): token buckets, in-flight slots and the
  // latest request of a burst, shared by every process. SQLite keeps them in its one process.
  {
    version: 17,
    name: 'flow control',
    sqlite: `SELECT 1;`,
    postgres: FLOW_CONTROL_TABLES_POSTGRES,
  },
  // Create-or-send (docs/http.md "Create-or-send"): a business key names at most one instance of
  // a machine, so concurrent first requests on one key create one instance. The key index of
  // migration 9 becomes unique. Keys written before could repeat (a model binder without an
  // atomic claim, racing): the oldest instance keeps its key, the others lose it (they stay
  // listed by id and state).
  {
    version: 18,
    name: 'unique business key',
    sqlite: UNIQUE_BUSINESS_KEY,
    postgres: UNIQUE_BUSINESS_KEY,
  },
  // Watch leases (watch-leases.ts): the commit of an instance no process watches sends no
  // NOTIFY. Nullable, not indexed (only ever read with the row the commit updates); written by
  // watchers, about once a minute per watched instance. SQLite's feed stays in its process.
  {
    version: 19,
    name: 'watch leases',
    sqlite: `SELECT 1;`,
    postgres: WATCH_LEASES_POSTGRES,
  },
  // Scenario isolation (docs/scenarios.md): the scenario the parent's step played when it started
  // a child, replayed by the parent's completion step (child.complete, child.timeout). Nullable,
  // written with the row's insert.
  {
    version: 20,
    name: 'child parent scenario',
    sqlite: `ALTER TABLE machine_children ADD COLUMN parent_scenario TEXT;`,
    postgres: `ALTER TABLE machine_children ADD COLUMN parent_scenario json;`,
  },
  // Flow control's idle rows are deleted by the expired-row sweep (flow-control.ts sweepIdle),
  // which needs when a key's slots were last taken; debounce's maxWait needs when a burst began.
  {
    version: 21,
    name: 'flow control idle rows',
    sqlite: `SELECT 1;`,
    postgres: FLOW_CONTROL_IDLE_POSTGRES,
  },
  // The history archive (history-retention.ts): with MACHINE_HISTORY_RETENTION_ARCHIVE the
  // retention sweep moves a finished instance's records here instead of deleting them, in the
  // batch's transaction. Written only by that sweep; never read by the runtime.
  {
    version: 22,
    name: 'history archive',
    sqlite: HISTORY_ARCHIVE_SQLITE,
    postgres: HISTORY_ARCHIVE_POSTGRES,
  },
];

/** The `schema_migrations` table itself (created outside the versioned list). */
export const SCHEMA_MIGRATIONS_DDL = {
  sqlite: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`,
  postgres: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`,
} as const;

/** Migrations not yet in `applied`, in order. */
export function pendingMigrations(applied: Iterable<number>): Migration[] {
  const done = new Set(applied);
  return MIGRATIONS.filter((migration) => !done.has(migration.version));
}
