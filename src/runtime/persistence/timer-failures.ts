/**
 * `machine_timer_failures` (migration 13): the failed attempts at delivering one timer fire, one
 * row per instance and timer, one implementation per backend.
 *
 * A timer fire whose event makes a behavior throw commits nothing, so the fire stays due and the
 * next sweep tries it again. The row counts those attempts for the one fire it names (the stay,
 * by its entry time, and the fire count the fire was computed from), so the sweep can wait
 * between tries and give up after the last (engine/timers/timer-failures.ts). It is not kept on
 * `machine_timer_fires`: the first fire of a stay has no row there, and a fire row exists only
 * once a fire was delivered. A row naming an older fire or stay counts as none; the next
 * failure overwrites it, so the table holds at most one row per instance and timer.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';

/** One timer's failed attempts at its pending fire. */
export interface TimerFailureRow {
  rootEventId: string;
  timerKey: string;
  /** ISO-8601 UTC entry time of the stay the fire belongs to. */
  stateEnteredAt: string;
  /** The fire's count before it (0: the stay's first fire). */
  fireCount: number;
  /** Failed attempts at this fire. */
  attempts: number;
  /** `Name: message` of the last failure. */
  lastError: string;
  /** ISO-8601 UTC time of the last failure. */
  failedAt: string;
  /** ISO-8601 UTC: no attempt before this; `null` once the fire was given up (recorded). */
  retryAt: string | null;
}

/** The failed attempts of a store's timers. */
export interface TimerFailureStore {
  /** The rows of an instance, by timer key. */
  list(rootEventId: string): Promise<TimerFailureRow[]>;
  /** Writes the row of `row.rootEventId`, `row.timerKey` (inserted or replaced). */
  record(row: TimerFailureRow): Promise<void>;
}

const COLUMNS = `root_event_id, timer_key, state_entered_at, fire_count, attempts, last_error,
  failed_at, retry_at`;

/** Migration 13 on SQLite. */
export const TIMER_FAILURES_TABLE_SQLITE = `CREATE TABLE machine_timer_failures (
  root_event_id    TEXT NOT NULL,
  timer_key        TEXT NOT NULL,
  state_entered_at TEXT NOT NULL,
  fire_count       INTEGER NOT NULL,
  attempts         INTEGER NOT NULL,
  last_error       TEXT NOT NULL,
  failed_at        TEXT NOT NULL,
  retry_at         TEXT,
  PRIMARY KEY (root_event_id, timer_key)
) WITHOUT ROWID;`;

/** Migration 13 on PostgreSQL. */
export const TIMER_FAILURES_TABLE_POSTGRES = `CREATE TABLE machine_timer_failures (
  root_event_id    text NOT NULL,
  timer_key        text NOT NULL,
  state_entered_at timestamptz NOT NULL,
  fire_count       integer NOT NULL,
  attempts         integer NOT NULL,
  last_error       text NOT NULL,
  failed_at        timestamptz NOT NULL,
  retry_at         timestamptz,
  PRIMARY KEY (root_event_id, timer_key)
);`;

interface FailureDbRow {
  root_event_id: string;
  timer_key: string;
  state_entered_at: string | Date;
  fire_count: number;
  attempts: number;
  last_error: string;
  failed_at: string | Date;
  retry_at: string | Date | null;
}

const iso = (value: string | Date): string => (value instanceof Date ? value.toISOString() : value);

function fromRow(row: FailureDbRow): TimerFailureRow {
  return {
    rootEventId: row.root_event_id,
    timerKey: row.timer_key,
    stateEnteredAt: iso(row.state_entered_at),
    fireCount: Number(row.fire_count),
    attempts: Number(row.attempts),
    lastError: row.last_error,
    failedAt: iso(row.failed_at),
    retryAt: row.retry_at === null ? null : iso(row.retry_at),
  };
}

function values(row: TimerFailureRow): unknown[] {
  return [
    row.rootEventId,
    row.timerKey,
    row.stateEnteredAt,
    row.fireCount,
    row.attempts,
    row.lastError,
    row.failedAt,
    row.retryAt,
  ];
}

const UPSERT_SET = `state_entered_at = excluded.state_entered_at,
  fire_count = excluded.fire_count, attempts = excluded.attempts, last_error = excluded.last_error,
  failed_at = excluded.failed_at, retry_at = excluded.retry_at`;

/** `machine_timer_failures` on SQLite. */
export class SqliteTimerFailures implements TimerFailureStore {
  readonly #db: Database.Database;
  #statements: { list: Database.Statement; record: Database.Statement } | undefined;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  get #sql(): { list: Database.Statement; record: Database.Statement } {
    this.#statements ??= {
      list: this.#db.prepare(
        `SELECT * FROM machine_timer_failures WHERE root_event_id = ? ORDER BY timer_key`,
      ),
      record: this.#db.prepare(`INSERT INTO machine_timer_failures (${COLUMNS})
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (root_event_id, timer_key) DO UPDATE SET ${UPSERT_SET}`),
    };
    return this.#statements;
  }

  /** Forgets prepared statements (the schema changed). */
  reset(): void {
    this.#statements = undefined;
  }

  async list(rootEventId: string): Promise<TimerFailureRow[]> {
    return (this.#sql.list.all(rootEventId) as FailureDbRow[]).map(fromRow);
  }

  async record(row: TimerFailureRow): Promise<void> {
    this.#sql.record.run(...values(row));
  }
}

/** `machine_timer_failures` on PostgreSQL. */
export class PostgresTimerFailures implements TimerFailureStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async list(rootEventId: string): Promise<TimerFailureRow[]> {
    const result = await this.#pool.query<FailureDbRow>({
      name: 'mr_timer_failures_list',
      text: `SELECT * FROM machine_timer_failures WHERE root_event_id = $1 ORDER BY timer_key COLLATE "C"`,
      values: [rootEventId],
    });
    return result.rows.map(fromRow);
  }

  async record(row: TimerFailureRow): Promise<void> {
    await this.#pool.query({
      name: 'mr_timer_failures_record',
      text: `INSERT INTO machine_timer_failures (${COLUMNS})
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (root_event_id, timer_key) DO UPDATE SET ${UPSERT_SET}`,
      values: values(row),
    });
  }
}

/** `machine_timer_failures` in process memory. */
export class MemoryTimerFailures implements TimerFailureStore {
  readonly #rows = new Map<string, TimerFailureRow>();

  async list(rootEventId: string): Promise<TimerFailureRow[]> {
    return [...this.#rows.values()]
      .filter((row) => row.rootEventId === rootEventId)
      .sort((a, b) => (a.timerKey < b.timerKey ? -1 : a.timerKey > b.timerKey ? 1 : 0))
      .map((row) => ({ ...row }));
  }

  async record(row: TimerFailureRow): Promise<void> {
    this.#rows.set(JSON.stringify([row.rootEventId, row.timerKey]), { ...row });
  }

  /** Deletes the rows of an instance (it finished). */
  forget(rootEventId: string): void {
    for (const [key, row] of this.#rows)
      if (row.rootEventId === rootEventId) this.#rows.delete(key);
  }
}
