/**
 * The statements of the PostgreSQL store: every named statement's text, the multi-row history
 * INSERT built once per row count, and the one-statement commit built once per shape.
 */
import type pg from 'pg';
import type { HistoryRecord } from '../interpreter/types.js';
import { holderGoneCall } from './holders.js';
import { pushEventColumns } from './rows.js';

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
export const SQL = {
  // Create-or-send: the new instance's business key (unique per machine, migration 18).
  bindBusinessKey: `UPDATE machine_instances SET business_key = $1 WHERE root_event_id = $2`,
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
  // A finished instance fires no timer again: its fire and failure rows go with its finish.
  deleteTimerRows: `WITH f AS (DELETE FROM machine_timer_fires WHERE root_event_id = $1)
    DELETE FROM machine_timer_failures WHERE root_event_id = $1`,
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

export type StatementName = keyof typeof SQL;

/** Runs a named statement of `SQL` (prepared once per connection). */
export async function runNamed<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Pool | pg.PoolClient,
  name: StatementName,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return client.query<R>({ name: `mr_${name}`, text: SQL[name], values });
}

const EVENT_COLUMNS = 12;
/** Most history rows per INSERT statement (12 parameters each; PostgreSQL allows 65535). */
export const EVENT_CHUNK = 100;
const insertEventsText = new Map<number, string>();

// `INSERT INTO machine_events ... VALUES (...), (...)` for `rows` rows, built once per count.
export function insertEventsSql(rows: number): string {
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
export interface CommitShape {
  create: boolean;
  events: number;
  entered: boolean;
  left: boolean;
  release: boolean;
  /** A lock-free send's update: written only while no live lock row exists (`locked` says). */
  lockFree: boolean;
  /** An update that finishes the instance: its timer fire and failure rows are deleted. */
  finish: boolean;
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
 * live lock row refused the update. Every shape answers `watched`: whether a process holds the
 * instance's watch lease (watch-leases.ts; a create always counts as watched), from the row
 * version the update wrote, so a lease taken before the commit is never missed.
 */
export function commitStatement(shape: CommitShape): { name: string; text: string } {
  const key = `${shape.create ? 'c' : 'u'}${shape.events}${shape.entered ? 'e' : ''}${shape.left ? 'l' : ''}${shape.release ? 'r' : ''}${shape.lockFree ? 'f' : ''}${shape.finish ? 'd' : ''}`;
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
    ON CONFLICT (root_event_id) DO NOTHING RETURNING true AS watched)`
      : `w AS (UPDATE machine_instances
    SET machine_value = $3, context = $4, status = $5, sequence_number = $6, updated_at = $7,
      definition_version = $${versionParam}
    WHERE root_event_id = $1 AND machine_id = $2 AND sequence_number = $8${shape.lockFree ? ' AND NOT (SELECT live FROM l)' : ''}
    RETURNING watched_until > now() AS watched)`,
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
  if (shape.finish) {
    parts.push(
      `tf AS (DELETE FROM machine_timer_fires WHERE root_event_id = $1 AND EXISTS (SELECT 1 FROM w))`,
    );
    parts.push(
      `tx AS (DELETE FROM machine_timer_failures WHERE root_event_id = $1 AND EXISTS (SELECT 1 FROM w))`,
    );
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
    text: `WITH ${parts.join(',\n')}\nSELECT count(*)::int AS written, bool_or(watched) AS watched${shape.lockFree ? ', (SELECT live FROM l) AS locked' : ''} FROM w`,
  };
  commitStatements.set(key, statement);
  return statement;
}

// Parameters of the multi-row INSERT: each record's columns, records in order.
export function eventValues(history: readonly HistoryRecord[]): unknown[] {
  const values: unknown[] = [];
  for (const record of history) pushEventColumns(values, record);
  return values;
}

/** `?` placeholders (shared child-row SQL) as PostgreSQL's `$1, $2, ...`. */
export function numbered(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}
