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
// Taken from the module, not the global: a test's fake timers replace the global one, and
// queued commits must still be written.
import { setImmediate as afterIo } from 'node:timers';
import type Database from 'better-sqlite3';
import { IdempotencyClaimLostError } from './idempotency.js';
import { SqliteIdempotencyKeys } from './idempotency-sql.js';
import { SqliteTimerFailures } from './timer-failures.js';
import { CheckpointWorker } from './sqlite-checkpoints.js';
import { HOLDER_GONE_SQL, processHolder, registerHolderFunction } from './holders.js';
import { sqliteDriver } from './sqlite-driver.js';
import type { ChildRow, ChildRowChange } from '../interpreter/child-rows.js';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import type { ChildQuery } from './child-rows.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import { sqliteInstanceQueries, type InstanceQueries } from './instance-queries.js';
import { SCHEMA_MIGRATIONS_DDL, pendingMigrations } from './migrations.js';
import {
  childChangeSql,
  childFromRow,
  childQuerySql,
  currentStateFromRow,
  historyFromRow,
  instanceInStateFromRow,
  lockFromRow,
  readLoadFromValues,
  timerCandidateFromRow,
  timerClaimValues,
  timerFireFromRow,
  snapshotFromRow,
  toJson,
  type ChildDbRow,
  type CurrentStateDbRow,
  type EventRow,
  type InstanceRow,
  type LockDbRow,
  type ReadLoadValues,
  type TimerCandidateDbRow,
  type TimerFireDbRow,
  traceContextColumn,
} from './rows.js';
import {
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
  TimerFireConflictError,
  assertCommitRequest,
  currentStateChanges,
  flattenCommit,
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
  type TimerFireClaim,
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

// Every statement of this dialect, prepared once per connection.
const SQL = {
  loadInstance: `SELECT root_event_id, machine_id, machine_value, context, status, sequence_number,
    parent_machine_id, parent_root_event_id, definition_version, paused_at
    FROM machine_instances WHERE root_event_id = ?`,
  insertInstance: `INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at,
     parent_machine_id, parent_root_event_id, definition_version)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (root_event_id) DO NOTHING`,
  updateInstance: `UPDATE machine_instances
    SET machine_value = ?, context = ?, status = ?, sequence_number = ?, updated_at = ?,
      definition_version = ?
    WHERE root_event_id = ? AND machine_id = ? AND sequence_number = ?`,
  insertEvent: `INSERT INTO machine_events
    (id, sequence_number, created_at, machine_id, root_event_id, source, type, payload, machine_value, context, version, actor)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // A state entered again (self-transition) restarts its entry time.
  insertState: `INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at, trace_context)
    VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (root_event_id, state_id) DO UPDATE
      SET state_entered_at = excluded.state_entered_at, trace_context = excluded.trace_context`,
  deleteState: `DELETE FROM machine_current_states WHERE root_event_id = ? AND state_id = ?`,
  setScenario: `UPDATE machine_current_states SET scenario_class = ?, scenario_params = ?
    WHERE root_event_id = ?`,
  history: `SELECT * FROM machine_events WHERE root_event_id = ? AND sequence_number > ?
    ORDER BY sequence_number LIMIT ?`,
  currentStates: `SELECT * FROM machine_current_states WHERE root_event_id = ? ORDER BY state_id`,
  findInState: `SELECT root_event_id, machine_id, state_id, state_entered_at FROM machine_current_states
    WHERE machine_id = ? AND state_id = ? AND state_entered_at < ?
    ORDER BY state_entered_at, root_event_id LIMIT ?`,
  // The stay's row of the timer joined in; rows of other stays count as none (timerCandidateFromRow).
  timerCandidates: `SELECT cs.root_event_id, cs.state_entered_at, f.state_entered_at AS f_state_entered_at,
      f.last_fired_at AS f_last_fired_at, f.fire_count AS f_fire_count, f.status AS f_status
    FROM machine_current_states cs
    LEFT JOIN machine_timer_fires f ON f.root_event_id = cs.root_event_id AND f.timer_key = ?
    WHERE cs.machine_id = ? AND cs.state_id = ? AND cs.state_entered_at <= ?
      AND NOT EXISTS (SELECT 1 FROM machine_instances p
        WHERE p.root_event_id = cs.root_event_id AND p.paused_at IS NOT NULL)
      AND (cs.state_entered_at, cs.root_event_id) > (?, ?)
      AND (f.root_event_id IS NULL OR f.state_entered_at IS NOT cs.state_entered_at
        OR (f.status = 'active' AND f.last_fired_at <= ?))
    ORDER BY cs.state_entered_at, cs.root_event_id LIMIT ?`,
  timerFires: `SELECT * FROM machine_timer_fires WHERE root_event_id = ? ORDER BY timer_key`,
  // The claim: written only when the row is still what the fire was computed from (CASE: same
  // stay -> same count and status; another stay or none -> only if a first fire was expected).
  claimTimerFire: `INSERT INTO machine_timer_fires
    (root_event_id, timer_key, state_entered_at, last_fired_at, fire_count, status)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (root_event_id, timer_key) DO UPDATE SET state_entered_at = excluded.state_entered_at,
      last_fired_at = excluded.last_fired_at, fire_count = excluded.fire_count, status = excluded.status
    WHERE CASE WHEN machine_timer_fires.state_entered_at IS excluded.state_entered_at
      THEN machine_timer_fires.fire_count = ? AND machine_timer_fires.status = ? ELSE ? END`,
  // One statement: insert, or take over an expired row or one whose holder process is gone
  // (asked only of a row found held). A live row is left alone (0 changes).
  acquireLock: `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context, holder)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (root_event_id) DO UPDATE SET owner_id = excluded.owner_id, acquired_at = excluded.acquired_at,
      expires_at = excluded.expires_at, context = excluded.context, holder = excluded.holder
    WHERE machine_locks.expires_at < excluded.acquired_at OR ${HOLDER_GONE_SQL}(machine_locks.holder)`,
  releaseLock: `DELETE FROM machine_locks WHERE root_event_id = ? AND owner_id = ?`,
  readLock: `SELECT * FROM machine_locks WHERE root_event_id = ?`,
  // A live lock (the acquire statement takes over rows with expires_at < now, so >= is live).
  liveLock: `SELECT 1 FROM machine_locks WHERE root_event_id = ? AND expires_at >= ?
    AND NOT ${HOLDER_GONE_SQL}(holder)`,
  // The instance row and its lock's expiry, joined on the primary keys (loadForRead). A dead
  // holder's row reads as expired at its acquisition: the send takes the locking path, which
  // takes it over. Without a row the CASE stops at its first test: no function call.
  loadForRead: `SELECT i.root_event_id, i.machine_id, i.machine_value, i.context, i.status,
      i.sequence_number, i.parent_machine_id, i.parent_root_event_id,
      CASE WHEN l.holder IS NOT NULL AND ${HOLDER_GONE_SQL}(l.holder) THEN l.acquired_at
        ELSE l.expires_at END AS lock_expires_at, i.definition_version, i.paused_at
    FROM machine_instances i LEFT JOIN machine_locks l ON l.root_event_id = i.root_event_id
    WHERE i.root_event_id = ?`,
  sweepLocks: `DELETE FROM machine_locks WHERE expires_at < ? OR ${HOLDER_GONE_SQL}(holder)`,
} as const;

type Statements = { -readonly [K in keyof typeof SQL]: Database.Statement };

const EVENT_COLUMNS = 12;
/** Most history rows per INSERT statement (12 parameters each, well under SQLite's limit). */
const EVENT_CHUNK = 50;

// Parameters of a multi-row history INSERT: the columns of `rows` records from `start`.
function eventValues(history: readonly HistoryRecord[], start: number, rows: number): unknown[] {
  const values: unknown[] = [];
  for (let index = start; index < start + rows; index += 1) {
    const record = history[index]!;
    values.push(
      record.id,
      record.sequence,
      record.createdAt,
      record.machineId,
      record.rootEventId,
      record.source,
      record.type,
      toJson(record.payload),
      JSON.stringify(record.value),
      toJson(record.context),
      record.version,
      record.actor,
    );
  }
  return values;
}

// SQLITE_BUSY / SQLITE_LOCKED and their extended codes (SQLITE_BUSY_SNAPSHOT, ...).
function isBusy(error: unknown): boolean {
  if (!(error instanceof sqliteDriver().SqliteError)) return false;
  return error.code.startsWith('SQLITE_BUSY') || error.code.startsWith('SQLITE_LOCKED');
}

/**
 * Most commits per group transaction: a large burst is written in several transactions, so the
 * database's write lock, which other processes wait for, is held for a bounded time.
 */
export const COMMIT_GROUP_MAX = 64;

/** A commit waiting for its group's transaction (see `SqliteStore.commit`). */
interface QueuedCommit {
  request: CommitRequest;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A part of a group failed in a way that rolled the whole transaction back (SQLITE_FULL, I/O). */
class GroupRolledBack extends Error {}

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
  readonly timerFailures: SqliteTimerFailures;
  readonly queries: InstanceQueries;
  #statements: Statements | undefined;
  /** History INSERTs by row count (1..EVENT_CHUNK), prepared on first use. */
  #insertEvents = new Map<number, Database.Statement>();
  readonly #commitTransaction: (request: CommitRequest) => void;
  /** One commit inside the group's transaction: a savepoint, so a refused one writes nothing. */
  readonly #commitPart: (request: CommitRequest) => void;
  readonly #groupTransaction: Database.Transaction<(group: readonly QueuedCommit[]) => unknown[]>;
  /** Commits of this turn of the event loop, written together after its I/O callbacks. */
  #queued: QueuedCommit[] = [];
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
    this.idempotencyKeys = new SqliteIdempotencyKeys(this.#db);
    this.timerFailures = new SqliteTimerFailures(this.#db);
    this.queries = sqliteInstanceQueries(this.#db);
    if (options.migrate !== false) this.migrateSync();
    const commit = this.#db.transaction((request: CommitRequest) => this.#applyCommit(request));
    // IMMEDIATE takes the write lock at BEGIN: a deferred transaction that upgrades later can
    // fail with SQLITE_BUSY without waiting when another process writes concurrently.
    this.#commitTransaction = (request) => commit.immediate(request);
    // Called inside the group's transaction, better-sqlite3 wraps it in a savepoint.
    this.#commitPart = (request) => commit(request);
    this.#groupTransaction = this.#db.transaction((group: readonly QueuedCommit[]) => {
      const outcomes: unknown[] = [];
      for (const queued of group) {
        try {
          this.#commitPart(queued.request);
          outcomes.push(undefined);
        } catch (error) {
          // A refusal (fence, lock, hook) rolled back its savepoint only; an error that ended
          // the transaction (disk full, I/O) took the others' writes with it.
          if (!this.#db.inTransaction)
            throw new GroupRolledBack('group rolled back', { cause: error });
          outcomes.push(error ?? new Error('commit failed'));
        }
      }
      return outcomes;
    });
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
    this.#db
      .transaction(() => {
        this.#db.exec(SCHEMA_MIGRATIONS_DDL.sqlite);
        const applied = this.#db
          .prepare('SELECT version FROM schema_migrations')
          .pluck()
          .all() as number[];
        const record = this.#db.prepare(
          'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
        );
        for (const migration of pendingMigrations(applied)) {
          this.#db.exec(migration.sqlite);
          record.run(migration.version, migration.name, new Date().toISOString());
        }
      })
      .immediate();
    this.#statements = undefined;
    this.#insertEvents = new Map();
    this.idempotencyKeys.reset();
    this.timerFailures.reset();
  }

  /** Versions recorded in `schema_migrations`. */
  appliedMigrations(): number[] {
    return this.#db
      .prepare('SELECT version FROM schema_migrations ORDER BY version')
      .pluck()
      .all() as number[];
  }

  get #sql(): Statements {
    if (!this.#statements) {
      const prepared = {} as Statements;
      for (const key of Object.keys(SQL) as (keyof typeof SQL)[])
        prepared[key] = this.#db.prepare(SQL[key]);
      // Arrays, not objects: reads and lock-free sends run it on every request (rows.ts).
      prepared.loadForRead.raw(true);
      this.#statements = prepared;
    }
    return this.#statements;
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
  async commit(request: CommitRequest): Promise<void> {
    assertCommitRequest(request);
    return new Promise<void>((resolve, reject) => {
      if (this.#queued.push({ request, resolve, reject }) === 1) afterIo(this.#flush);
    });
  }

  // Writes the queued commits, in groups of at most COMMIT_GROUP_MAX (alone when only one).
  readonly #flush = (): void => {
    const queued = this.#queued;
    this.#queued = [];
    for (let start = 0; start < queued.length; start += COMMIT_GROUP_MAX)
      this.#commitGroup(queued.slice(start, start + COMMIT_GROUP_MAX));
  };

  #commitGroup(group: QueuedCommit[]): void {
    if (group.length === 1) {
      this.#commitAlone(group[0]!);
      return;
    }
    let outcomes: unknown[];
    try {
      outcomes = this.#groupTransaction.immediate(group);
    } catch (error) {
      if (error instanceof GroupRolledBack) {
        // Nothing of the group was written: each commit again, in a transaction of its own.
        for (const queued of group) this.#commitAlone(queued);
        return;
      }
      // BEGIN or COMMIT failed (busy past the timeout, closed): nothing written, for anyone.
      const failure = isBusy(error) ? new StoreBusyError(error) : error;
      for (const queued of group) queued.reject(failure);
      return;
    }
    for (let index = 0; index < group.length; index += 1) {
      const outcome = outcomes[index];
      if (outcome === undefined) {
        this.#committed();
        group[index]!.resolve();
      } else group[index]!.reject(outcome);
    }
  }

  #commitAlone(queued: QueuedCommit): void {
    try {
      this.#commitTransaction(queued.request);
    } catch (error) {
      // Another connection kept the database locked past the busy timeout: nothing applied.
      queued.reject(isBusy(error) ? new StoreBusyError(error) : error);
      return;
    }
    this.#committed();
    queued.resolve();
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
    this.#db.transaction(() => this.#applyChildChanges(changes)).immediate();
  }

  #applyChildChanges(changes: readonly ChildRowChange[]): void {
    for (const change of changes) {
      const { sql, params } = childChangeSql(change);
      this.#db.prepare(sql).run(...params);
    }
  }

  // The instance writes of the request and its `also` requests, then their child-row changes.
  #applyCommit(request: CommitRequest): void {
    // Before any write: a lock taken while a lock-free step was computed wins.
    if (
      request.lockFree === true &&
      this.#sql.liveLock.get(request.snapshot.id, new Date().toISOString()) !== undefined
    )
      throw new InstanceLockedError(request.snapshot.id);
    const requests = flattenCommit(request);
    const traceContext = traceContextColumn(request);
    for (const part of requests)
      this.#applyInstance(
        part,
        part === request ? request.releaseLockOwner : undefined,
        traceContext,
      );
    for (const part of requests) if (part.children) this.#applyChildChanges(part.children);
    if (request.timerFire !== undefined) this.#claimTimerFire(request.timerFire);
    if (
      request.idempotency !== undefined &&
      !this.idempotencyKeys.completeSync(request.idempotency)
    )
      throw new IdempotencyClaimLostError(request.idempotency);
    if (request.inTransaction !== undefined) {
      const pending = request.inTransaction({ kind: 'sqlite', database: this.#db });
      // better-sqlite3 commits when the function returns: an awaited write would land outside.
      if (pending instanceof Promise)
        throw new Error('A SQLite transaction hook must be synchronous.');
    }
  }

  #applyInstance(
    request: InstanceWrite,
    releaseLockOwner: string | undefined,
    traceContext: string | null,
  ): void {
    const { snapshot, history, expectedSequence } = request;
    const sql = this.#sql;
    const now = request.now.toISOString();
    const value = JSON.stringify(snapshot.value);
    const context = JSON.stringify(snapshot.context);
    const result =
      expectedSequence === null
        ? sql.insertInstance.run(
            snapshot.id,
            snapshot.machineId,
            value,
            context,
            snapshot.status,
            snapshot.sequence,
            now,
            now,
            snapshot.parent?.machineId ?? null,
            snapshot.parent?.id ?? null,
            snapshot.version ?? null,
          )
        : sql.updateInstance.run(
            value,
            context,
            snapshot.status,
            snapshot.sequence,
            now,
            snapshot.version ?? null,
            snapshot.id,
            snapshot.machineId,
            expectedSequence,
          );
    if (result.changes !== 1) throw new SequenceConflictError(snapshot.id, expectedSequence);
    // Several rows per statement (one step and reset instead of one per row).
    for (let start = 0; start < history.length; start += EVENT_CHUNK) {
      const rows = Math.min(EVENT_CHUNK, history.length - start);
      this.#insertEventsStatement(rows).run(eventValues(history, start, rows));
    }
    const { entered, left } = currentStateChanges(request);
    for (const stateId of left) sql.deleteState.run(snapshot.id, stateId);
    for (const stateId of entered)
      sql.insertState.run(snapshot.id, snapshot.machineId, stateId, now, traceContext);
    if (request.scenario !== undefined) {
      const { scenario } = request;
      sql.setScenario.run(
        scenario?.slug ?? null,
        scenario === null ? null : JSON.stringify(scenario.params),
        snapshot.id,
      );
    }
    if (releaseLockOwner !== undefined) sql.releaseLock.run(snapshot.id, releaseLockOwner);
  }

  #claimTimerFire(claim: TimerFireClaim): void {
    const result = this.#sql.claimTimerFire.run(...timerClaimValues(claim));
    if (result.changes !== 1) throw new TimerFireConflictError(claim);
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

  #insertEventsStatement(rows: number): Database.Statement {
    let statement = this.#insertEvents.get(rows);
    if (statement === undefined) {
      const tuple = `(${Array.from({ length: EVENT_COLUMNS }, () => '?').join(', ')})`;
      statement = this.#db.prepare(
        `${SQL.insertEvent.slice(0, SQL.insertEvent.indexOf('VALUES'))}VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}`,
      );
      this.#insertEvents.set(rows, statement);
    }
    return statement;
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

  async loadForRead(rootEventId: string): Promise<ReadLoad | null> {
    const values = this.#sql.loadForRead.get(rootEventId) as ReadLoadValues | undefined;
    return values ? readLoadFromValues(values) : null;
  }

  async sweepExpiredLocks(): Promise<number> {
    return this.#sql.sweepLocks.run(new Date().toISOString()).changes;
  }

  async close(): Promise<void> {
    // Commits queued in this turn are written before the connection goes.
    this.#flush();
    // The thread's connection first: the store's, closed last, checkpoints and removes the WAL.
    this.#untilCheckpointWorker = null;
    await this.#checkpointWorker?.stop();
    if (this.#db.open) this.#db.close();
  }
}
