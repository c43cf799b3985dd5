/**
 * The default store: one SQLite file through better-sqlite3, created and migrated on first use.
 *
 * Durability: WAL journal with `synchronous = NORMAL`. A committed transaction survives a crash
 * of the process (the WAL is in the OS before `COMMIT` returns); only a power loss or OS crash
 * may roll back the last few commits, and never corrupts the file. FULL would fsync the WAL on
 * every commit (about an order of magnitude slower on ordinary disks) for protection against
 * power loss; choose it with `synchronous: 'FULL'` (`sqlite:./x.db?synchronous=full`).
 *
 * better-sqlite3 is synchronous: each method runs to completion on the event loop, so a
 * transaction never interleaves with another call of this process. Other processes are
 * serialized by SQLite's file lock; writers take it at `BEGIN IMMEDIATE` and wait up to
 * `busyTimeoutMs` for it.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { SqliteIdempotencyKeys } from './idempotency-sql.js';
import { MemoryFlowControl } from './flow-control.js';
import { SqliteTimerFailures } from './timer-failures.js';
import { CheckpointWorker } from './sqlite-checkpoints.js';
import { processHolder, registerHolderFunction } from './holders.js';
import { sqliteDriver } from './sqlite-driver.js';
import { applyChildChanges, applyCommit } from './sqlite-commit.js';
import { GroupCommits } from './sqlite-group-commit.js';
import { ReadBatches } from './sqlite-read-batch.js';
import { SqliteStatements, isBusy, type Statements } from './sqlite-statements.js';
import type { ChildRow, ChildRowChange } from '../interpreter/child-rows.js';
import type { ChildQuery } from './child-rows.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import { sqliteHistoryRetention, type HistoryRetentionStore } from './history-retention.js';
import { sqliteInstanceQueries, type InstanceQueries } from './instance-queries.js';
import { sqliteScheduleCandidates, type ScheduleCandidates } from './schedule-candidates.js';
import { migrateSqlite, sqliteAppliedMigrations } from './sqlite-migrate.js';
import { childQuerySql } from './child-row-sql.js';
import {
  childFromRow,
  currentStateFromRow,
  historyFromRow,
  instanceInStateFromRow,
  lockFromRow,
  readLoadFromValues,
  timerCandidateFromRow,
  timerFireFromRow,
  snapshotFromRow,
  type ChildDbRow,
  type CurrentStateDbRow,
  type EventRow,
  type InstanceRow,
  type LockDbRow,
  type ReadLoadValues,
  type TimerCandidateDbRow,
  type TimerFireDbRow,
} from './rows.js';
import {
  StoreBusyError,
  assertCommitRequest,
  type CommitRequest,
  type CurrentStateRow,
  type FindInStateOptions,
  type HistoryQuery,
  type InstanceInState,
  type LockedLoad,
  type LockRequest,
  type LockRow,
  type ReadLoad,
  type TimerCandidate,
  type TimerCandidateQuery,
  type Store,
  type TimerFireRow,
} from './store.js';

/** Options of `SqliteStore`. */
export interface SqliteStoreOptions {
  /** File path, or `:memory:`. Parent directories are created. */
  filename: string;
  /** `NORMAL` (default) or `FULL`; see the module comment. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long a writer waits for another process's write lock (default 5000 ms). */
  busyTimeoutMs?: number;
  /** Run pending migrations when opening (default true). */
  migrate?: boolean;
  /**
   * Where WAL checkpoints run (docs/persistence.md "Checkpoints"): `worker` (default for files),
   * a worker thread with its own connection once the store has committed
   * `CHECKPOINT_WORKER_AFTER_COMMITS` times, the committing thread only past 8,000 WAL pages;
   * `inline`, SQLite's automatic checkpoint on the committing thread every 1,000 pages.
   */
  checkpoints?: 'worker' | 'inline';
}

/** Commits after which a store starts its checkpoint thread (a store that barely writes never does). */
export const CHECKPOINT_WORKER_AFTER_COMMITS = 100;

export { COMMIT_GROUP_MAX } from './sqlite-group-commit.js';

// Upper bound for ISO text comparisons when no `enteredBefore` is given.
const FAR_FUTURE = '9999-12-31T23:59:59.999Z';

/** `Store` on a SQLite file (or `:memory:` database). */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  /**
   * A lock row costs a write transaction here (about as much as the commit: BEGIN IMMEDIATE,
   * WAL frames, file locks), and the read a lock-free send starts with is a local one.
   */
  readonly lockFreeSends = true;
  readonly filename: string;
  readonly #db: Database.Database;
  readonly idempotencyKeys: SqliteIdempotencyKeys;
  /** In the process: a SQLite database serves one server process (docs/http.md "Flow control"). */
  readonly flowControl = new MemoryFlowControl();
  readonly timerFailures: SqliteTimerFailures;
  readonly queries: InstanceQueries;
  readonly #prepared: SqliteStatements;
  readonly #commits: GroupCommits;
  readonly #reads: ReadBatches;
  readonly historyRetention: HistoryRetentionStore;
  readonly scheduleCandidates: ScheduleCandidates;
  readonly #lockAndLoadTransaction: (request: LockRequest) => LockedLoad;
  readonly #synchronous: 'NORMAL' | 'FULL';
  /** Commits until the checkpoint thread starts (`null`: checkpoints stay inline). */
  #untilCheckpointWorker: number | null;
  #checkpointWorker: CheckpointWorker | null = null;

  constructor(options: SqliteStoreOptions) {
    this.filename = options.filename;
    this.#synchronous = options.synchronous === 'FULL' ? 'FULL' : 'NORMAL';
    this.#untilCheckpointWorker =
      options.filename === ':memory:' || options.checkpoints === 'inline'
        ? null
        : CHECKPOINT_WORKER_AFTER_COMMITS;
    if (options.filename !== ':memory:') mkdirSync(dirname(options.filename), { recursive: true });
    const Driver = sqliteDriver();
    this.#db = new Driver(options.filename, { timeout: options.busyTimeoutMs ?? 5000 });
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma(`synchronous = ${this.#synchronous}`);
    this.#db.pragma('foreign_keys = ON');
    registerHolderFunction(this.#db);
    this.#prepared = new SqliteStatements(this.#db);
    this.idempotencyKeys = new SqliteIdempotencyKeys(this.#db);
    this.timerFailures = new SqliteTimerFailures(this.#db);
    this.queries = sqliteInstanceQueries(this.#db);
    this.historyRetention = sqliteHistoryRetention(this.#db);
    this.scheduleCandidates = sqliteScheduleCandidates(this.#db);
    if (options.migrate !== false) this.migrateSync();
    this.#reads = new ReadBatches(this.#db, (rootEventId) => this.loadForReadNow(rootEventId));
    // The turn's reads ride at the end of its group commit's transaction (docs/persistence.md
    // "Read batches"): one transaction per turn instead of two.
    this.#commits = new GroupCommits(
      this.#db,
      (request) => applyCommit(this.#db, this.#prepared, this.idempotencyKeys, request),
      () => this.#committed(),
      this.#reads,
    );
    const lockAndLoad = this.#db.transaction((request: LockRequest): LockedLoad => {
      const row = this.#sql.loadInstance.get(request.rootEventId) as InstanceRow | undefined;
      if (row === undefined) return { acquired: false, snapshot: null };
      return { acquired: this.#acquire(request), snapshot: snapshotFromRow(row) };
    });
    this.#lockAndLoadTransaction = (request) => lockAndLoad.immediate(request);
  }

  /** The underlying connection, for tools and the benchmark's hand-written baseline. */
  get database(): Database.Database {
    return this.#db;
  }

  /** The checkpoint thread, once started (`checkpoints: 'worker'`); for tools and tests. */
  get checkpointWorker(): CheckpointWorker | null {
    return this.#checkpointWorker;
  }

  async migrate(): Promise<void> {
    this.migrateSync();
  }

  /** Applies pending migrations in one immediate transaction (other processes wait). */
  migrateSync(): void {
    migrateSqlite(this.#db);
    this.#prepared.reset();
    this.idempotencyKeys.reset();
    this.timerFailures.reset();
  }

  /** Versions recorded in `schema_migrations`. */
  appliedMigrations(): number[] {
    return sqliteAppliedMigrations(this.#db);
  }

  get #sql(): Statements {
    return this.#prepared.sql;
  }

  async load(rootEventId: string): Promise<MachineSnapshot | null> {
    const row = this.#sql.loadInstance.get(rootEventId) as InstanceRow | undefined;
    return row ? snapshotFromRow(row) : null;
  }

  /**
   * Commits are grouped: each is queued and written, after the I/O callbacks of the current
   * turn of the event loop, in one write transaction with the others queued in that turn, each
   * inside a savepoint of its own (a refused commit, fenced out or locked, writes nothing and
   * does not affect the others). The promise settles once the group's transaction committed:
   * the same durability as a transaction of its own (WAL, the store's `synchronous`), with the
   * pages several commits share (the history's last leaves, their parents, the header) and the
   * file locks written and taken once per group instead of once per commit
   * (docs/persistence.md "Group commits").
   */
  // Not async: the queue's promise is the answer (an async frame around it cost two promises more).
  commit(request: CommitRequest): Promise<void> {
    try {
      assertCommitRequest(request);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.#commits.enqueue(request);
  }

  // Counts a commit for the checkpoint thread (started after the first ones).
  #committed(): void {
    if (this.#checkpointWorker !== null) this.#checkpointWorker.committed();
    else if (this.#untilCheckpointWorker !== null && --this.#untilCheckpointWorker === 0) {
      this.#checkpointWorker = new CheckpointWorker({
        database: this.#db,
        filename: this.filename,
        synchronous: this.#synchronous,
      });
    }
  }

  async findChildren(query: ChildQuery): Promise<ChildRow[]> {
    const { sql, params } = childQuerySql(query);
    return (this.#db.prepare(sql).all(...params) as ChildDbRow[]).map(childFromRow);
  }

  async updateChildren(changes: readonly ChildRowChange[]): Promise<void> {
    this.#db.transaction(() => applyChildChanges(this.#db, changes)).immediate();
  }

  async timerCandidates(query: TimerCandidateQuery): Promise<TimerCandidate[]> {
    const dueBy = query.dueBy.toISOString();
    const rows = this.#sql.timerCandidates.all(
      query.timerKey,
      query.machineId,
      query.stateId,
      dueBy,
      query.after?.stateEnteredAt ?? '',
      query.after?.rootEventId ?? '',
      dueBy,
      query.limit,
    ) as TimerCandidateDbRow[];
    return rows.map((row) => timerCandidateFromRow(row, query.timerKey));
  }

  async timerFires(rootEventId: string): Promise<TimerFireRow[]> {
    return (this.#sql.timerFires.all(rootEventId) as TimerFireDbRow[]).map(timerFireFromRow);
  }

  async history(rootEventId: string, query: HistoryQuery = {}): Promise<HistoryRecord[]> {
    const rows = this.#sql.history.all(
      rootEventId,
      query.afterSequence ?? 0,
      query.limit ?? -1,
    ) as EventRow[];
    return rows.map(historyFromRow);
  }

  async currentStates(rootEventId: string): Promise<CurrentStateRow[]> {
    return (this.#sql.currentStates.all(rootEventId) as CurrentStateDbRow[]).map(
      currentStateFromRow,
    );
  }

  async findInstancesInState(
    machineId: string,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]> {
    const before = options.enteredBefore?.toISOString() ?? FAR_FUTURE;
    const rows = this.#sql.findInState.all(
      machineId,
      stateId,
      before,
      options.limit,
    ) as CurrentStateDbRow[];
    return rows.map(instanceInStateFromRow);
  }

  async tryAcquireLock(request: LockRequest): Promise<boolean> {
    try {
      return this.#acquire(request);
    } catch (error) {
      if (isBusy(error)) throw new StoreBusyError(error);
      throw error;
    }
  }

  async lockAndLoad(request: LockRequest): Promise<LockedLoad> {
    try {
      return this.#lockAndLoadTransaction(request);
    } catch (error) {
      // Writers hold the database for one short transaction each, so this takes the whole
      // busy timeout only when something else keeps it locked.
      if (isBusy(error)) throw new StoreBusyError(error);
      throw error;
    }
  }

  #acquire(request: LockRequest): boolean {
    const now = Date.now();
    const result = this.#sql.acquireLock.run(
      request.rootEventId,
      request.ownerId,
      new Date(now).toISOString(),
      new Date(now + request.ttlMs).toISOString(),
      request.context ?? null,
      processHolder(),
    );
    return result.changes === 1;
  }

  async releaseLock(rootEventId: string, ownerId: string): Promise<boolean> {
    return this.#sql.releaseLock.run(rootEventId, ownerId).changes === 1;
  }

  async readLock(rootEventId: string): Promise<LockRow | null> {
    const row = this.#sql.readLock.get(rootEventId) as LockDbRow | undefined;
    return row ? lockFromRow(row) : null;
  }

  /**
   * Batched: the reads asked in one turn run together after its I/O callbacks, in one read
   * transaction begun after the last of them was asked (sqlite-read-batch.ts): none misses a
   * commit that finished before it was asked, and the transaction's locks are paid once.
   */
  loadForRead(rootEventId: string): Promise<ReadLoad | null> {
    return this.#reads.enqueue(rootEventId);
  }

  /** `loadForRead` now, in the caller's turn and its own read transaction (tools, the batch). */
  loadForReadNow(rootEventId: string): ReadLoad | null {
    const values = this.#sql.loadForRead.get(rootEventId) as ReadLoadValues | undefined;
    return values ? readLoadFromValues(values) : null;
  }

  async sweepExpiredLocks(): Promise<number> {
    return this.#sql.sweepLocks.run(new Date().toISOString()).changes;
  }

  async close(): Promise<void> {
    // Commits queued in this turn are written before the connection goes.
    this.#commits.flush();
    this.#reads.flush();
    // The thread's connection first: the store's, closed last, checkpoints and removes the WAL.
    this.#untilCheckpointWorker = null;
    await this.#checkpointWorker?.stop();
    if (this.#db.open) this.#db.close();
  }
}
