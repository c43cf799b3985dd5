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
import { IdempotencyClaimLostError } from './idempotency.js';
import { PostgresIdempotencyKeys } from './idempotency-sql.js';
import { PostgresTimerFailures } from './timer-failures.js';
import { holderGoneCall } from './holders.js';
import { holderConnection, type HolderConnection } from './postgres-holder.js';
import type { ChildRow, ChildRowChange } from '../interpreter/child-rows.js';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import type { ChildQuery } from './child-rows.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import { postgresInstanceQueries, type InstanceQueries } from './instance-queries.js';
import { SCHEMA_MIGRATIONS_DDL, pendingMigrations, type Migration } from './migrations.js';
import {
  childChangeSql,
  childFromRow,
  childQuerySql,
  currentStateFromRow,
  historyFromRow,
  instanceInStateFromRow,
  lockFromRow,
  readLoadFromRow,
  snapshotFromRow,
  timerCandidateFromRow,
  timerClaimValues,
  timerFireFromRow,
  toJson,
  type ChildDbRow,
  type CurrentStateDbRow,
  type EventRow,
  type InstanceRow,
  type LockDbRow,
  type ReadLoadRow,
  type TimerCandidateDbRow,
  type TimerFireDbRow,
  traceContextColumn,
} from './rows.js';
import {
  InstanceLockedError,
  SequenceConflictError,
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
  type Store,
  type TimerCandidate,
  type TimerCandidateQuery,
  type TimerFireClaim,
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

// The lock row's holder backend is gone (holders.ts).
const GONE = holderGoneCall('machine_locks.holder_pid', 'machine_locks.holder_start');

// A lock row's takeover, shared by both acquire statements: the row is expired, or its holder's
// backend is gone (docs/persistence.md "Dead holders").
const TAKE_OVER = `owner_id = excluded.owner_id, acquired_at = excluded.acquired_at,
      expires_at = excluded.expires_at, context = excluded.context,
      holder_pid = excluded.holder_pid, holder_start = excluded.holder_start
    WHERE machine_locks.expires_at < excluded.acquired_at OR ${GONE}`;

// A row that refuses others: unexpired (the acquire statements take over rows with expires_at <
// now, so >= is live), and not of a dead holder.
const LIVE_LOCK = `expires_at >= clock_timestamp() AND NOT ${GONE}`;

// Every statement of this dialect. Names make pg prepare each once per connection.
const SQL = {
  loadInstance: `SELECT root_event_id, machine_id, machine_value, context, status, sequence_number,
    parent_machine_id, parent_root_event_id, definition_version, paused_at
    FROM machine_instances WHERE root_event_id = $1`,
  insertInstance: `INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at,
     parent_machine_id, parent_root_event_id, definition_version)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10)
    ON CONFLICT (root_event_id) DO NOTHING`,
  updateInstance: `UPDATE machine_instances
    SET machine_value = $3, context = $4, status = $5, sequence_number = $6, updated_at = $7,
      definition_version = $9
    WHERE root_event_id = $1 AND machine_id = $2 AND sequence_number = $8`,
  // A state entered again (self-transition) restarts its entry time.
  insertStates: `INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at, trace_context)
    SELECT $1, $2, unnest($3::text[]), $4, $5::json
    ON CONFLICT (root_event_id, state_id) DO UPDATE
      SET state_entered_at = excluded.state_entered_at, trace_context = excluded.trace_context`,
  deleteStates: `DELETE FROM machine_current_states WHERE root_event_id = $1 AND state_id = ANY($2::text[])`,
  setScenario: `UPDATE machine_current_states SET scenario_class = $2, scenario_params = $3::json
    WHERE root_event_id = $1`,
  history: `SELECT * FROM machine_events WHERE root_event_id = $1 AND sequence_number > $2
    ORDER BY sequence_number LIMIT $3`,
  currentStates: `SELECT * FROM machine_current_states WHERE root_event_id = $1 ORDER BY state_id COLLATE "C"`,
  findInState: `SELECT root_event_id, machine_id, state_id, state_entered_at FROM machine_current_states
    WHERE machine_id = $1 AND state_id = $2 AND state_entered_at < $3
    ORDER BY state_entered_at, root_event_id LIMIT $4`,
  // See sqlite-store.ts: the stay's timer row joined in, rows of other stays count as none.
  timerCandidates: `SELECT cs.root_event_id, cs.state_entered_at, f.state_entered_at AS f_state_entered_at,
      f.last_fired_at AS f_last_fired_at, f.fire_count AS f_fire_count, f.status AS f_status
    FROM machine_current_states cs
    LEFT JOIN machine_timer_fires f ON f.root_event_id = cs.root_event_id AND f.timer_key = $1
    WHERE cs.machine_id = $2 AND cs.state_id = $3 AND cs.state_entered_at <= $4
      AND NOT EXISTS (SELECT 1 FROM machine_instances p
        WHERE p.root_event_id = cs.root_event_id AND p.paused_at IS NOT NULL)
      AND (cs.state_entered_at, cs.root_event_id) > ($5::timestamptz, $6::text)
      AND (f.root_event_id IS NULL OR f.state_entered_at IS DISTINCT FROM cs.state_entered_at
        OR (f.status = 'active' AND f.last_fired_at <= $4))
    ORDER BY cs.state_entered_at, cs.root_event_id LIMIT $7`,
  timerFires: `SELECT * FROM machine_timer_fires WHERE root_event_id = $1 ORDER BY timer_key COLLATE "C"`,
  claimTimerFire: `INSERT INTO machine_timer_fires
    (root_event_id, timer_key, state_entered_at, last_fired_at, fire_count, status)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (root_event_id, timer_key) DO UPDATE SET state_entered_at = excluded.state_entered_at,
      last_fired_at = excluded.last_fired_at, fire_count = excluded.fire_count, status = excluded.status
    WHERE CASE WHEN machine_timer_fires.state_entered_at IS NOT DISTINCT FROM excluded.state_entered_at
      THEN machine_timer_fires.fire_count = $7 AND machine_timer_fires.status = $8 ELSE $9::int = 1 END`,
  // One statement: insert, or take over an expired row or one whose holder backend is gone
  // (asked only of a row found held); RETURNING tells whether we got it.
  acquireLock: `INSERT INTO machine_locks
      (root_event_id, owner_id, acquired_at, expires_at, context, holder_pid, holder_start)
    VALUES ($1, $2, clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond', $4, $5, $6)
    ON CONFLICT (root_event_id) DO UPDATE SET ${TAKE_OVER}
    RETURNING owner_id`,
  // A send's first round trip: the instance row, and its lock taken when the row exists. The
  // data-modifying CTE runs whether or not it is read; its RETURNING says whether we got it.
  lockAndLoad: `WITH instance AS (
      SELECT root_event_id, machine_id, machine_value, context, status, sequence_number,
        parent_machine_id, parent_root_event_id, definition_version, paused_at
      FROM machine_instances WHERE root_event_id = $1),
    taken AS (INSERT INTO machine_locks
        (root_event_id, owner_id, acquired_at, expires_at, context, holder_pid, holder_start)
      SELECT $1, $2, clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond', $4, $5::int, $6::timestamptz
      WHERE EXISTS (SELECT 1 FROM instance)
      ON CONFLICT (root_event_id) DO UPDATE SET ${TAKE_OVER}
      RETURNING owner_id)
    SELECT instance.*, EXISTS (SELECT 1 FROM taken) AS acquired FROM instance`,
  releaseLock: `DELETE FROM machine_locks WHERE root_event_id = $1 AND owner_id = $2`,
  readLock: `SELECT * FROM machine_locks WHERE root_event_id = $1`,
  // A live lock (the acquire statements take over rows with expires_at < now, so >= is live).
  liveLock: `SELECT 1 FROM machine_locks WHERE root_event_id = $1 AND ${LIVE_LOCK}`,
  // The instance row and its lock's expiry, joined on the primary keys (loadForRead). A dead
  // holder's row reads as expired at its acquisition: the send takes the locking path, which
  // takes it over. Without a row the CASE stops at its first test: no activity lookup.
  loadForRead: `SELECT i.root_event_id, i.machine_id, i.machine_value, i.context, i.status,
      i.sequence_number, i.parent_machine_id, i.parent_root_event_id,
      CASE WHEN l.holder_pid IS NOT NULL AND ${holderGoneCall('l.holder_pid', 'l.holder_start')} THEN l.acquired_at
        ELSE l.expires_at END AS lock_expires_at, i.definition_version, i.paused_at
    FROM machine_instances i LEFT JOIN machine_locks l ON l.root_event_id = i.root_event_id
    WHERE i.root_event_id = $1`,
  sweepLocks: `DELETE FROM machine_locks WHERE expires_at < clock_timestamp() OR ${GONE}`,
} as const;

type StatementName = keyof typeof SQL;

const EVENT_COLUMNS = 12;
/** Most history rows per INSERT statement (12 parameters each; PostgreSQL allows 65535). */
const EVENT_CHUNK = 100;
const insertEventsText = new Map<number, string>();

// `INSERT INTO machine_events ... VALUES (...), (...)` for `rows` rows, built once per count.
function insertEventsSql(rows: number): string {
  let text = insertEventsText.get(rows);
  if (text === undefined) {
    const tuples = Array.from(
      { length: rows },
      (_, row) =>
        `(${Array.from({ length: EVENT_COLUMNS }, (_, column) => `$${row * EVENT_COLUMNS + column + 1}`).join(', ')})`,
    );
    text = `INSERT INTO machine_events
    (id, sequence_number, created_at, machine_id, root_event_id, source, type, payload, machine_value, context, version, actor)
    VALUES ${tuples.join(', ')}`;
    insertEventsText.set(rows, text);
  }
  return text;
}

/** What decides the text of a one-statement commit. */
interface CommitShape {
  create: boolean;
  events: number;
  entered: boolean;
  left: boolean;
  release: boolean;
  /** A lock-free send's update: written only while no live lock row exists (`locked` says). */
  lockFree: boolean;
}

const EVENT_CASTS = [
  'text',
  'integer',
  'timestamptz',
  'text',
  'text',
  'text',
  'text',
  'json',
  'json',
  'json',
  'integer',
  'text',
] as const;
const commitStatements = new Map<string, { name: string; text: string }>();

/**
 * The one-statement commit of a shape, built once. Parameters: $1-$7 the instance (id,
 * machine, value, context, status, sequence, now), then the expected sequence (update) or the
 * parent's machine and id (create), then the definition version, then entered states, left states and the lock owner when
 * present, then the history rows' columns. A lock-free shape also answers `locked`: whether a
 * live lock row refused the update.
 */
function commitStatement(shape: CommitShape): { name: string; text: string } {
  const key = `${shape.create ? 'c' : 'u'}${shape.events}${shape.entered ? 'e' : ''}${shape.left ? 'l' : ''}${shape.release ? 'r' : ''}${shape.lockFree ? 'f' : ''}`;
  let statement = commitStatements.get(key);
  if (statement !== undefined) return statement;
  // The definition version follows the fixed parameters (after the parent or expected sequence).
  const versionParam = shape.create ? 10 : 9;
  let next = versionParam + 1;
  // A live lock row (the database clock decides, as for taking one) keeps the update out.
  const parts = shape.lockFree
    ? [
        `l AS (SELECT EXISTS (SELECT 1 FROM machine_locks WHERE root_event_id = $1 AND ${LIVE_LOCK}) AS live)`,
      ]
    : [];
  parts.push(
    shape.create
      ? `w AS (INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at,
     parent_machine_id, parent_root_event_id, definition_version)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $${versionParam})
    ON CONFLICT (root_event_id) DO NOTHING RETURNING 1)`
      : `w AS (UPDATE machine_instances
    SET machine_value = $3, context = $4, status = $5, sequence_number = $6, updated_at = $7,
      definition_version = $${versionParam}
    WHERE root_event_id = $1 AND machine_id = $2 AND sequence_number = $8${shape.lockFree ? ' AND NOT (SELECT live FROM l)' : ''} RETURNING 1)`,
  );
  if (shape.entered) {
    parts.push(`s AS (INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
    SELECT $1, $2, unnest($${next++}::text[]), $7 WHERE EXISTS (SELECT 1 FROM w)
    ON CONFLICT (root_event_id, state_id) DO UPDATE SET state_entered_at = excluded.state_entered_at)`);
  }
  if (shape.left) {
    parts.push(`d AS (DELETE FROM machine_current_states
    WHERE root_event_id = $1 AND state_id = ANY($${next++}::text[]) AND EXISTS (SELECT 1 FROM w))`);
  }
  if (shape.release) {
    parts.push(`r AS (DELETE FROM machine_locks
    WHERE root_event_id = $1 AND owner_id = $${next++} AND EXISTS (SELECT 1 FROM w))`);
  }
  if (shape.events > 0) {
    const tuples: string[] = [];
    for (let row = 0; row < shape.events; row += 1) {
      tuples.push(`(${EVENT_CASTS.map((cast) => `$${next++}::${cast}`).join(', ')})`);
    }
    parts.push(`e AS (INSERT INTO machine_events
    (id, sequence_number, created_at, machine_id, root_event_id, source, type, payload, machine_value, context, version, actor)
    SELECT * FROM (VALUES ${tuples.join(', ')}) AS v WHERE EXISTS (SELECT 1 FROM w))`);
  }
  statement = {
    name: `mr_commit_${key}`,
    text: `WITH ${parts.join(',\n')}\nSELECT count(*)::int AS written${shape.lockFree ? ', (SELECT live FROM l) AS locked' : ''} FROM w`,
  };
  commitStatements.set(key, statement);
  return statement;
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
  readonly timerFailures: PostgresTimerFailures;
  /** This process's holder connection: the backend its lock rows and key claims name. */
  readonly #holder: HolderConnection;
  readonly queries: InstanceQueries;

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
    this.queries = postgresInstanceQueries(this.#pool);
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
    return client.query<R>({ name: `mr_${name}`, text: SQL[name], values });
  }

  async migrate(): Promise<void> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      // Serializes concurrent migrators (several app processes starting at once) per schema.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
        `machine_routes.migrate.${this.schema ?? ''}`,
      ]);
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await client.query(SCHEMA_MIGRATIONS_DDL.postgres);
      const applied = await client.query<{ version: number }>(
        'SELECT version FROM schema_migrations',
      );
      for (const migration of pendingMigrations(applied.rows.map((row) => row.version))) {
        await client.query(migration.postgres);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** Migrations this version needs that the database lacks (all of them on a fresh schema). */
  async pendingMigrations(): Promise<Migration[]> {
    try {
      return pendingMigrations(await this.appliedMigrations());
    } catch (error) {
      // 42P01: no schema_migrations table, nothing was ever migrated here.
      if ((error as { code?: unknown }).code === '42P01') return pendingMigrations([]);
      throw error;
    }
  }

  /** Versions recorded in `schema_migrations`. */
  async appliedMigrations(): Promise<number[]> {
    const result = await this.#pool.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    return result.rows.map((row) => row.version);
  }

  async load(rootEventId: string): Promise<MachineSnapshot | null> {
    const result = await this.#query<InstanceRow>('loadInstance', [rootEventId]);
    const row = result.rows[0];
    return row ? snapshotFromRow(row) : null;
  }

  async commit(request: CommitRequest): Promise<void> {
    assertCommitRequest(request);
    if (
      request.also === undefined || request.also.length === 0
        ? (request.children === undefined || request.children.length === 0) &&
          request.inTransaction === undefined &&
          // The scenario columns are written after the entered states: a second statement.
          request.scenario === undefined &&
          request.timerFire === undefined &&
          request.idempotency === undefined &&
          request.history.length <= EVENT_CHUNK
        : false
    ) {
      return this.#commitOneStatement(request);
    }
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      // Before any write: a lock taken while a lock-free step was computed wins.
      if (request.lockFree === true) {
        const live = await this.#query('liveLock', [request.snapshot.id], client);
        if (live.rowCount !== 0) throw new InstanceLockedError(request.snapshot.id);
      }
      // The instance writes of the request and its `also` requests, then their child rows.
      const requests = flattenCommit(request);
      const traceContext = traceContextColumn(request);
      for (const part of requests) {
        const release = part === request ? request.releaseLockOwner : undefined;
        await this.#writeInstance(part, release, traceContext, client);
      }
      for (const part of requests)
        if (part.children) await this.#writeChildren(part.children, client);
      if (request.timerFire !== undefined) await this.#claimTimerFire(request.timerFire, client);
      if (
        request.idempotency !== undefined &&
        !(await this.idempotencyKeys.completeOn(client, request.idempotency))
      )
        throw new IdempotencyClaimLostError(request.idempotency);
      await request.inTransaction?.({ kind: 'postgres', client });
      await client.query('COMMIT');
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError as Error;
      }
      throw error;
    } finally {
      // A connection whose ROLLBACK failed is in an unknown state: destroy it, not reuse it.
      client.release(broken);
    }
  }

  /**
   * The common commit (one instance, no delegation rows or hooks) as one statement: the
   * instance write, then, each only when it wrote a row (the fence), the history rows, the
   * current-state diff and the lock release, as data-modifying CTEs. One statement is atomic on
   * its own: one round trip instead of BEGIN, three to five statements and COMMIT.
   */
  async #commitOneStatement(request: CommitRequest): Promise<void> {
    const { snapshot, history, expectedSequence } = request;
    const { entered, left } = currentStateChanges(request);
    const values: unknown[] = [
      snapshot.id,
      snapshot.machineId,
      JSON.stringify(snapshot.value),
      JSON.stringify(snapshot.context),
      snapshot.status,
      snapshot.sequence,
      request.now,
    ];
    if (expectedSequence === null)
      values.push(snapshot.parent?.machineId ?? null, snapshot.parent?.id ?? null);
    else values.push(expectedSequence);
    values.push(snapshot.version ?? null);
    const shape: CommitShape = {
      create: expectedSequence === null,
      events: history.length,
      entered: entered.length > 0,
      left: left.length > 0,
      release: request.releaseLockOwner !== undefined,
      lockFree: request.lockFree === true && expectedSequence !== null,
    };
    if (shape.entered) values.push(entered);
    if (shape.left) values.push(left);
    if (shape.release) values.push(request.releaseLockOwner);
    if (history.length > 0) values.push(...eventValues(history));
    const { name, text } = commitStatement(shape);
    const result = await this.#pool.query<{ written: number; locked?: boolean }>({
      name,
      text,
      values,
    });
    const row = result.rows[0];
    if (row?.written !== 1) {
      if (row?.locked === true) throw new InstanceLockedError(snapshot.id);
      throw new SequenceConflictError(snapshot.id, expectedSequence);
    }
  }

  async #writeInstance(
    request: InstanceWrite,
    releaseLockOwner: string | undefined,
    traceContext: string | null,
    client: pg.PoolClient,
  ): Promise<void> {
    const { snapshot, history, expectedSequence } = request;
    const instance = [
      snapshot.id,
      snapshot.machineId,
      JSON.stringify(snapshot.value),
      JSON.stringify(snapshot.context),
      snapshot.status,
      snapshot.sequence,
      request.now,
    ];
    const written =
      expectedSequence === null
        ? await this.#query(
            'insertInstance',
            [
              ...instance,
              snapshot.parent?.machineId ?? null,
              snapshot.parent?.id ?? null,
              snapshot.version ?? null,
            ],
            client,
          )
        : await this.#query(
            'updateInstance',
            [...instance, expectedSequence, snapshot.version ?? null],
            client,
          );
    if (written.rowCount !== 1) throw new SequenceConflictError(snapshot.id, expectedSequence);
    for (let start = 0; start < history.length; start += EVENT_CHUNK) {
      const chunk = history.slice(start, start + EVENT_CHUNK);
      await client.query({
        name: `mr_insertEvents_${chunk.length}`,
        text: insertEventsSql(chunk.length),
        values: eventValues(chunk),
      });
    }
    const { entered, left } = currentStateChanges(request);
    if (left.length > 0) await this.#query('deleteStates', [snapshot.id, left], client);
    if (entered.length > 0) {
      await this.#query(
        'insertStates',
        [snapshot.id, snapshot.machineId, entered, request.now, traceContext],
        client,
      );
    }
    if (request.scenario !== undefined) {
      const { scenario } = request;
      await this.#query(
        'setScenario',
        [
          snapshot.id,
          scenario?.slug ?? null,
          scenario === null ? null : JSON.stringify(scenario.params),
        ],
        client,
      );
    }
    if (releaseLockOwner !== undefined) {
      await this.#query('releaseLock', [snapshot.id, releaseLockOwner], client);
    }
  }

  async #claimTimerFire(claim: TimerFireClaim, client: pg.PoolClient): Promise<void> {
    const result = await this.#query('claimTimerFire', timerClaimValues(claim), client);
    if (result.rowCount !== 1) throw new TimerFireConflictError(claim);
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

  async #writeChildren(
    changes: readonly ChildRowChange[],
    client: pg.Pool | pg.PoolClient,
  ): Promise<void> {
    for (const change of changes) {
      const { sql, params } = childChangeSql(change);
      await client.query(numbered(sql), params);
    }
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
      await this.#writeChildren(changes, client);
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

  async sweepExpiredLocks(): Promise<number> {
    const result = await this.#query('sweepLocks', []);
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.#holder.release();
    await this.#pool.end();
  }
}

// Parameters of the multi-row INSERT: each record's columns, records in order.
function eventValues(history: readonly HistoryRecord[]): unknown[] {
  const values: unknown[] = [];
  for (const record of history) {
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

/** `?` placeholders (shared child-row SQL) as PostgreSQL's `$1, $2, ...`. */
function numbered(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}
