/**
 * The scale-out store: PostgreSQL through a `pg` pool. Several processes may share one
 * database: locks are rows taken by one atomic statement, timed by the database clock
 * (`clock_timestamp()`, so hosts with skewed clocks agree on expiry), and commits are fenced on
 * the instance's sequence number.
 *
 * Statements are named, so each pooled connection parses and plans them once. History rows go in
 * with one multi-row INSERT per macrostep (a statement per row count, up to EVENT_CHUNK rows;
 * longer histories in chunks): about twice as fast as an `unnest` of column arrays, whose array
 * parsing and casts cost more than the extra plans.
 */
import pg from 'pg';
import { PostgresIdempotencyKeys } from './idempotency-sql.js';
import { PostgresFlowControl } from './flow-control-sql.js';
import { PostgresTimerFailures } from './timer-failures.js';
import { EVENT_CHUNK, numbered, runNamed, type StatementName } from './postgres-statements.js';
import { holderConnection, type HolderConnection } from './postgres-holder.js';
import type { ChildRow, ChildRowChange } from '../interpreter/child-rows.js';
import type { ChildQuery } from './child-rows.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import { postgresHistoryRetention, type HistoryRetentionStore } from './history-retention.js';
import { postgresInstanceQueries, type InstanceQueries } from './instance-queries.js';
import { postgresScheduleCandidates, type ScheduleCandidates } from './schedule-candidates.js';
import type { Migration } from './migrations.js';
import { commitInTransaction, commitOneStatement, writeChildren } from './postgres-commit.js';
import {
  migratePostgres,
  postgresAppliedMigrations,
  postgresPendingMigrations,
} from './postgres-migrate.js';
import { childQuerySql } from './child-row-sql.js';
import {
  childFromRow,
  currentStateFromRow,
  historyFromRow,
  instanceInStateFromRow,
  lockFromRow,
  readLoadFromRow,
  snapshotFromRow,
  timerCandidateFromRow,
  timerFireFromRow,
  type ChildDbRow,
  type CurrentStateDbRow,
  type EventRow,
  type InstanceRow,
  type LockDbRow,
  type ReadLoadRow,
  type TimerCandidateDbRow,
  type TimerFireDbRow,
} from './rows.js';
import {
  assertCommitRequest,
  type CommitOutcome,
  type CommitRequest,
  type CurrentStateRow,
  type FindInStateOptions,
  type HistoryQuery,
  type InstanceInState,
  type LockedLoad,
  type LockRequest,
  type LockRow,
  type ReadLoad,
  type Store,
  type TimerCandidate,
  type TimerCandidateQuery,
  type TimerFireRow,
} from './store.js';

/** Options of `PostgresStore`. */
export interface PostgresStoreOptions {
  /** `postgres://` / `postgresql://` URL (without the `schema` parameter). */
  connectionString: string;
  /**
   * Schema holding the tables (default: the server's search_path, normally `public`). Set as the
   * connections' `search_path`, so tests and tenants can each use their own; created by
   * `migrate()` when missing.
   */
  schema?: string;
  /** Maximum pooled connections (default 10). */
  poolSize?: number;
}

/** Checks a schema name so it can be quoted into DDL and `search_path` safely. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** `Store` on a PostgreSQL database. */
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  /**
   * Quick transitions skip the lock row here too (docs/persistence.md "Lock-free sends"): the
   * read they start with (`loadForRead`) is one round trip, as `lockAndLoad` was, and the
   * commit checks for a live lock in its one statement, so an event writes and deletes no lock
   * row: bench/http/bound-cpu.ts, database CPU per bound request 447 -> 394 us, the server's
   * 393 -> 355 us.
   */
  readonly lockFreeSends = true;
  readonly schema: string | undefined;
  /** The database it connects to (without the schema), for components that need their own connections. */
  readonly connectionString: string;
  readonly #pool: pg.Pool;
  readonly idempotencyKeys: PostgresIdempotencyKeys;
  readonly flowControl: PostgresFlowControl;
  readonly timerFailures: PostgresTimerFailures;
  /** This process's holder connection: the backend its lock rows and key claims name. */
  readonly #holder: HolderConnection;
  readonly queries: InstanceQueries;
  readonly historyRetention: HistoryRetentionStore;
  readonly scheduleCandidates: ScheduleCandidates;

  constructor(options: PostgresStoreOptions) {
    if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
      throw new Error(
        `Invalid PostgreSQL schema name '${options.schema}': use letters, digits and _.`,
      );
    }
    this.schema = options.schema;
    this.connectionString = options.connectionString;
    this.#pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      // Quoted like the schema's DDL: unquoted, PostgreSQL folds the name to lower case and a
      // mixed-case schema is never found.
      ...(options.schema ? { options: `-c search_path="${options.schema}"` } : {}),
    });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.#pool.on('error', () => {});
    this.#holder = holderConnection(options.connectionString);
    this.idempotencyKeys = new PostgresIdempotencyKeys(this.#pool, () => this.#holder.current());
    this.flowControl = new PostgresFlowControl(this.#pool, () => this.#holder.current());
    this.queries = postgresInstanceQueries(this.#pool);
    this.historyRetention = postgresHistoryRetention(this.#pool);
    this.scheduleCandidates = postgresScheduleCandidates(this.#pool);
    this.timerFailures = new PostgresTimerFailures(this.#pool);
  }

  /** The pool, for tools and the benchmark's hand-written baseline. */
  get pool(): pg.Pool {
    return this.#pool;
  }

  async #query<R extends pg.QueryResultRow>(
    name: StatementName,
    values: unknown[],
    client: pg.Pool | pg.PoolClient = this.#pool,
  ): Promise<pg.QueryResult<R>> {
    return runNamed<R>(client, name, values);
  }

  async migrate(): Promise<void> {
    await migratePostgres(this.#pool, this.schema);
  }

  /** Migrations this version needs that the database lacks (all of them on a fresh schema). */
  async pendingMigrations(): Promise<Migration[]> {
    return postgresPendingMigrations(this.#pool);
  }

  /** Versions recorded in `schema_migrations`. */
  async appliedMigrations(): Promise<number[]> {
    return postgresAppliedMigrations(this.#pool);
  }

  async load(rootEventId: string): Promise<MachineSnapshot | null> {
    const result = await this.#query<InstanceRow>('loadInstance', [rootEventId]);
    const row = result.rows[0];
    return row ? snapshotFromRow(row) : null;
  }

  // Not async: the common commit's promise is the answer (an async frame around it cost two
  // promises more, each a run of an OpenTelemetry context manager's hooks).
  commit(request: CommitRequest): Promise<CommitOutcome | undefined> {
    try {
      assertCommitRequest(request);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (
      request.also === undefined || request.also.length === 0
        ? (request.children === undefined || request.children.length === 0) &&
          request.inTransaction === undefined &&
          // The scenario columns are written after the entered states: a second statement.
          request.scenario === undefined &&
          request.timerFire === undefined &&
          request.idempotency === undefined &&
          request.businessKey === undefined &&
          request.history.length <= EVENT_CHUNK
        : false
    ) {
      return commitOneStatement(this.#pool, request);
    }
    return commitInTransaction(this.#pool, request, this.idempotencyKeys);
  }

  async timerCandidates(query: TimerCandidateQuery): Promise<TimerCandidate[]> {
    const result = await this.#query<TimerCandidateDbRow>('timerCandidates', [
      query.timerKey,
      query.machineId,
      query.stateId,
      query.dueBy,
      query.after?.stateEnteredAt ?? '-infinity',
      query.after?.rootEventId ?? '',
      query.limit,
    ]);
    return result.rows.map((row) => timerCandidateFromRow(row, query.timerKey));
  }

  async timerFires(rootEventId: string): Promise<TimerFireRow[]> {
    const result = await this.#query<TimerFireDbRow>('timerFires', [rootEventId]);
    return result.rows.map(timerFireFromRow);
  }

  async findChildren(query: ChildQuery): Promise<ChildRow[]> {
    const { sql, params } = childQuerySql(query);
    const result = await this.#pool.query<ChildDbRow>(numbered(sql), params);
    return result.rows.map(childFromRow);
  }

  async updateChildren(changes: readonly ChildRowChange[]): Promise<void> {
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await writeChildren(changes, client);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async history(rootEventId: string, query: HistoryQuery = {}): Promise<HistoryRecord[]> {
    const result = await this.#query<EventRow>('history', [
      rootEventId,
      query.afterSequence ?? 0,
      query.limit ?? null,
    ]);
    return result.rows.map(historyFromRow);
  }

  async currentStates(rootEventId: string): Promise<CurrentStateRow[]> {
    const result = await this.#query<CurrentStateDbRow>('currentStates', [rootEventId]);
    return result.rows.map(currentStateFromRow);
  }

  async findInstancesInState(
    machineId: string,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]> {
    const result = await this.#query<CurrentStateDbRow>('findInState', [
      machineId,
      stateId,
      // 'infinity' rather than an OR on NULL, so the bound stays an index condition.
      options.enteredBefore ?? 'infinity',
      options.limit,
    ]);
    return result.rows.map(instanceInStateFromRow);
  }

  async tryAcquireLock(request: LockRequest): Promise<boolean> {
    const holder = await this.#holder.current();
    const result = await this.#query('acquireLock', [
      request.rootEventId,
      request.ownerId,
      request.ttlMs,
      request.context ?? null,
      holder.pid,
      holder.start,
    ]);
    return result.rowCount === 1;
  }

  async lockAndLoad(request: LockRequest): Promise<LockedLoad> {
    // One statement: its snapshot predates the lock. A holder committing while this waits for
    // its lock row makes the snapshot stale; the commit's sequence fence then refuses the step.
    const holder = await this.#holder.current();
    const result = await this.#query<InstanceRow & { acquired: boolean }>('lockAndLoad', [
      request.rootEventId,
      request.ownerId,
      request.ttlMs,
      request.context ?? null,
      holder.pid,
      holder.start,
    ]);
    const row = result.rows[0];
    if (row === undefined) return { acquired: false, snapshot: null };
    return { acquired: row.acquired, snapshot: snapshotFromRow(row) };
  }

  async releaseLock(rootEventId: string, ownerId: string): Promise<boolean> {
    const result = await this.#query('releaseLock', [rootEventId, ownerId]);
    return result.rowCount === 1;
  }

  async readLock(rootEventId: string): Promise<LockRow | null> {
    const result = await this.#query<LockDbRow>('readLock', [rootEventId]);
    const row = result.rows[0];
    return row ? lockFromRow(row) : null;
  }

  async loadForRead(rootEventId: string): Promise<ReadLoad | null> {
    const result = await this.#query<ReadLoadRow>('loadForRead', [rootEventId]);
    const row = result.rows[0];
    return row ? readLoadFromRow(row) : null;
  }

  /**
   * Whether the URL reaches PostgreSQL through a pooler that shares a client's server connection
   * between transactions (docs/scaling.md "PgBouncer"): `true` when so. The holder connection
   * tells a pooler apart (its startup key names another process than the backend answering);
   * only then a probe client opens a transaction and asks for its backend: a pooler that gives
   * it the holder's backend, idle but still connected, pools per transaction. PgBouncer hands
   * out the server connection released last, so the probe meets it at once; a pooler set to
   * rotate its server connections may escape this check.
   */
  async sharesSessions(): Promise<boolean> {
    const holder = await this.#holder.current();
    if (holder.pooled !== true) return false;
    const probe = new pg.Client({ connectionString: this.connectionString });
    try {
      await probe.connect();
      await probe.query('BEGIN');
      const { rows } = await probe.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      return rows[0]?.pid === holder.pid;
    } finally {
      await probe.query('ROLLBACK').catch(() => {});
      await probe.end().catch(() => {});
    }
  }

  async sweepExpiredLocks(): Promise<number> {
    const result = await this.#query('sweepLocks', []);
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.#holder.release();
    await this.#pool.end();
  }
}
