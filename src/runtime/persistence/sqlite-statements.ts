/**
 * The SQLite store's statements: every statement's text, prepared once per connection (and
 * again after a migration), and the multi-row history INSERT prepared once per row count.
 */
import type Database from 'better-sqlite3';
import type { HistoryRecord } from '../interpreter/types.js';
import { HOLDER_GONE_SQL } from './holders.js';
import { pushEventColumns } from './rows.js';
import { sqliteDriver } from './sqlite-driver.js';

// Every statement of this dialect, prepared once per connection.
export const SQL = {
  // Create-or-send: the new instance's business key (unique per machine, migration 18).
  bindBusinessKey: `UPDATE machine_instances SET business_key = ? WHERE root_event_id = ?`,
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
  // A finished instance fires no timer again: its fire and failure rows go with its finish.
  deleteTimerFires: `DELETE FROM machine_timer_fires WHERE root_event_id = ?`,
  deleteTimerFailures: `DELETE FROM machine_timer_failures WHERE root_event_id = ?`,
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

export type Statements = { -readonly [K in keyof typeof SQL]: Database.Statement };

const EVENT_COLUMNS = 12;
/** Most history rows per INSERT statement (12 parameters each, well under SQLite's limit). */
export const EVENT_CHUNK = 50;

// Parameters of a multi-row history INSERT: the columns of `rows` records from `start`.
export function eventValues(
  history: readonly HistoryRecord[],
  start: number,
  rows: number,
): unknown[] {
  const values: unknown[] = [];
  for (let index = start; index < start + rows; index += 1) {
    pushEventColumns(values, history[index]!);
  }
  return values;
}

// SQLITE_BUSY / SQLITE_LOCKED and their extended codes (SQLITE_BUSY_SNAPSHOT, ...).
export function isBusy(error: unknown): boolean {
  if (!(error instanceof sqliteDriver().SqliteError)) return false;
  return error.code.startsWith('SQLITE_BUSY') || error.code.startsWith('SQLITE_LOCKED');
}

/** A UNIQUE constraint refused the statement (the statement only: the transaction goes on). */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof sqliteDriver().SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/**

/** The prepared statements of one connection: prepared on first use, dropped on `reset()`. */
export class SqliteStatements {
  readonly #db: Database.Database;
  #statements: Statements | undefined;
  /** History INSERTs by row count (1..EVENT_CHUNK), prepared on first use. */
  #insertEvents = new Map<number, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  get sql(): Statements {
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

  /** The history INSERT of `rows` rows. */
  insertEvents(rows: number): Database.Statement {
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

  /** Drops every prepared statement (the schema changed). */
  reset(): void {
    this.#statements = undefined;
    this.#insertEvents = new Map();
  }
}
