/**
 * The timer sweep's candidate queries of scheduled (cron) events (engine/timers/schedule-sweep.ts),
 * one implementation per backend: the instances a schedule's latest tick may be due for, with
 * their creation time (the anchor of the schedule's fire row) and that row. A schedule has one
 * fire row per instance (`machine_timer_fires`, key `<machine>:<event>:cron:<name>`), so each
 * query joins it by primary key and leaves out instances whose row already records a tick at or
 * after the bound. Paused and finished instances are left out.
 *
 * - by state: a range of `machine_current_states (machine_id, state_id, state_entered_at,
 *   root_event_id)` per selected state (the timers' index), keyset-paginated;
 * - every instance: a range of `machine_instances (machine_id, created_at, root_event_id)`
 *   (migration 9), keyset-paginated;
 * - a resolver's ids: primary-key reads of those ids.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import type { TimerFireStatus } from '../interpreter/due-timers.js';
import type { TimerFireRow } from './store.js';

/** Where a page of candidates ends (the sort key of its last row). */
export interface CandidatePosition {
  /** `state_entered_at` (by state) or `created_at` (every instance), ISO-8601 UTC. */
  time: string;
  rootEventId: string;
}

/** What the queries share. */
interface CandidateQueryBase {
  machineId: string;
  /** The schedule's fire row key. */
  timerKey: string;
  /** Just before the latest tick: instances selected, and rows last fired, at or before it. */
  dueBy: Date;
}

/** Instances in one state whose stay began at or before `dueBy`. */
export interface StateCandidateQuery extends CandidateQueryBase {
  stateId: string;
  after?: CandidatePosition;
  limit: number;
}

/** Every running instance created at or before `dueBy`. */
export interface InstanceCandidateQuery extends CandidateQueryBase {
  after?: CandidatePosition;
  limit: number;
}

/** The instances of `ids` (a resolver's answer, at most a page) that are of the machine. */
export interface IdCandidateQuery extends CandidateQueryBase {
  ids: readonly string[];
}

/** An instance a schedule's tick may be due for. */
export interface ScheduleCandidate {
  rootEventId: string;
  /** ISO-8601 UTC: the anchor of its schedule rows. */
  createdAt: string;
  /** By state: when its stay in the state began (the page's sort key). */
  stateEnteredAt?: string;
  /** Its row of the schedule (any anchor), `null` when none. */
  fire: TimerFireRow | null;
}

/** The schedule candidate queries of a store. */
export interface ScheduleCandidates {
  inState(query: StateCandidateQuery): Promise<ScheduleCandidate[]>;
  ofMachine(query: InstanceCandidateQuery): Promise<ScheduleCandidate[]>;
  byIds(query: IdCandidateQuery): Promise<ScheduleCandidate[]>;
}

interface CandidateDbRow {
  root_event_id: string;
  created_at: string | Date;
  state_entered_at?: string | Date;
  f_state_entered_at: string | Date | null;
  f_last_fired_at: string | Date | null;
  f_fire_count: number | null;
  f_status: TimerFireStatus | null;
}

const iso = (value: string | Date): string =>
  typeof value === 'string' ? value : value.toISOString();

function fromRow(row: CandidateDbRow, timerKey: string): ScheduleCandidate {
  return {
    rootEventId: row.root_event_id,
    createdAt: iso(row.created_at),
    ...(row.state_entered_at === undefined ? {} : { stateEnteredAt: iso(row.state_entered_at) }),
    fire:
      row.f_last_fired_at === null || row.f_status === null
        ? null
        : {
            rootEventId: row.root_event_id,
            timerKey,
            stateEnteredAt: row.f_state_entered_at === null ? null : iso(row.f_state_entered_at),
            lastFiredAt: iso(row.f_last_fired_at),
            fireCount: row.f_fire_count ?? 0,
            status: row.f_status,
          },
  };
}

const FIRE_COLUMNS = `i.root_event_id, i.created_at, f.state_entered_at AS f_state_entered_at,
  f.last_fired_at AS f_last_fired_at, f.fire_count AS f_fire_count, f.status AS f_status`;

/** `$n` (PostgreSQL) or `?` (SQLite) placeholders, numbered from 1. */
type Mark = (index: number) => string;

function statements(mark: Mark, pgCasts: boolean) {
  const time = (index: number) => (pgCasts ? `${mark(index)}::timestamptz` : mark(index));
  const text = (index: number) => (pgCasts ? `${mark(index)}::text` : mark(index));
  // $1 key, $2 machine, $3 due by (twice: the selection and the row), then the query's own.
  const common = `LEFT JOIN machine_timer_fires f ON f.root_event_id = i.root_event_id AND f.timer_key = ${mark(1)}
    WHERE i.machine_id = ${mark(2)} AND i.status = 'active' AND i.paused_at IS NULL
      AND (f.root_event_id IS NULL OR f.last_fired_at <= ${time(3)})`;
  return {
    inState: `SELECT ${FIRE_COLUMNS}, cs.state_entered_at
      FROM machine_current_states cs
      JOIN machine_instances i ON i.root_event_id = cs.root_event_id
      ${common}
      AND cs.machine_id = ${mark(2)} AND cs.state_id = ${mark(4)} AND cs.state_entered_at <= ${time(3)}
      AND (cs.state_entered_at, cs.root_event_id) > (${time(5)}, ${text(6)})
      ORDER BY cs.state_entered_at, cs.root_event_id LIMIT ${mark(7)}`,
    ofMachine: `SELECT ${FIRE_COLUMNS} FROM machine_instances i
      ${common}
      AND i.created_at <= ${time(3)} AND (i.created_at, i.root_event_id) > (${time(4)}, ${text(5)})
      ORDER BY i.created_at, i.root_event_id LIMIT ${mark(6)}`,
  };
}

const EPOCH = '1970-01-01T00:00:00.000Z';

/** The queries on SQLite (statements prepared on first use: the store migrates after it is built). */
export function sqliteScheduleCandidates(db: Database.Database): ScheduleCandidates {
  const sql = statements(() => '?', false);
  const cache = new Map<string, Database.Statement>();
  const prepared = (text: string): Database.Statement => {
    let statement = cache.get(text);
    if (statement === undefined) cache.set(text, (statement = db.prepare(text)));
    return statement;
  };
  const byIdsSql = (count: number) =>
    `SELECT ${FIRE_COLUMNS} FROM machine_instances i
      LEFT JOIN machine_timer_fires f ON f.root_event_id = i.root_event_id AND f.timer_key = ?
      WHERE i.machine_id = ? AND i.status = 'active' AND i.paused_at IS NULL
        AND (f.root_event_id IS NULL OR f.last_fired_at <= ?) AND i.created_at <= ?
        AND i.root_event_id IN (${Array.from({ length: count }, () => '?').join(', ')})`;
  return {
    async inState(query) {
      const dueBy = query.dueBy.toISOString();
      const rows = prepared(sql.inState).all(
        query.timerKey,
        query.machineId,
        dueBy,
        query.machineId,
        query.stateId,
        dueBy,
        query.after?.time ?? '',
        query.after?.rootEventId ?? '',
        query.limit,
      ) as CandidateDbRow[];
      return rows.map((row) => fromRow(row, query.timerKey));
    },
    async ofMachine(query) {
      const dueBy = query.dueBy.toISOString();
      const rows = prepared(sql.ofMachine).all(
        query.timerKey,
        query.machineId,
        dueBy,
        dueBy,
        query.after?.time ?? '',
        query.after?.rootEventId ?? '',
        query.limit,
      ) as CandidateDbRow[];
      return rows.map((row) => fromRow(row, query.timerKey));
    },
    async byIds(query) {
      if (query.ids.length === 0) return [];
      const dueBy = query.dueBy.toISOString();
      const rows = prepared(byIdsSql(query.ids.length)).all(
        query.timerKey,
        query.machineId,
        dueBy,
        dueBy,
        ...query.ids,
      ) as CandidateDbRow[];
      return rows.map((row) => fromRow(row, query.timerKey));
    },
  };
}

/** The queries on PostgreSQL. */
export function postgresScheduleCandidates(pool: pg.Pool): ScheduleCandidates {
  const mark: Mark = (index) => `$${index}`;
  const sql = statements(mark, true);
  // The ids as one array parameter: one statement text whatever their number.
  const byIds = `SELECT ${FIRE_COLUMNS} FROM machine_instances i
      LEFT JOIN machine_timer_fires f ON f.root_event_id = i.root_event_id AND f.timer_key = $1
      WHERE i.machine_id = $2 AND i.status = 'active' AND i.paused_at IS NULL
        AND (f.root_event_id IS NULL OR f.last_fired_at <= $3::timestamptz)
        AND i.created_at <= $3::timestamptz AND i.root_event_id = ANY($4::text[])`;
  return {
    async inState(query) {
      const result = await pool.query<CandidateDbRow>(sql.inState, [
        query.timerKey,
        query.machineId,
        query.dueBy,
        query.stateId,
        query.after?.time ?? EPOCH,
        query.after?.rootEventId ?? '',
        query.limit,
      ]);
      return result.rows.map((row) => fromRow(row, query.timerKey));
    },
    async ofMachine(query) {
      const result = await pool.query<CandidateDbRow>(sql.ofMachine, [
        query.timerKey,
        query.machineId,
        query.dueBy,
        query.after?.time ?? EPOCH,
        query.after?.rootEventId ?? '',
        query.limit,
      ]);
      return result.rows.map((row) => fromRow(row, query.timerKey));
    },
    async byIds(query) {
      if (query.ids.length === 0) return [];
      const result = await pool.query<CandidateDbRow>(byIds, [
        query.timerKey,
        query.machineId,
        query.dueBy,
        [...query.ids],
      ]);
      return result.rows.map((row) => fromRow(row, query.timerKey));
    },
  };
}

/** What the memory store keeps of an instance that the queries read. */
interface MemoryCandidateView {
  snapshot: { machineId: string; status: string; pausedAt?: string };
  history: readonly { createdAt: string }[];
  states: ReadonlyMap<string, { stateEnteredAt: string }>;
}

/** The queries over the memory store's instances and fire rows (scans, in the SQL orders). */
export function memoryScheduleCandidates(
  instances: ReadonlyMap<string, MemoryCandidateView>,
  fireOf: (rootEventId: string, timerKey: string) => TimerFireRow | undefined,
): ScheduleCandidates {
  const scan = (
    query: CandidateQueryBase,
    key: (id: string, entry: MemoryCandidateView) => string | null,
    after: CandidatePosition | undefined,
    limit: number,
    byState: boolean,
  ): ScheduleCandidate[] => {
    const dueBy = query.dueBy.toISOString();
    const found: { time: string; candidate: ScheduleCandidate }[] = [];
    for (const [id, entry] of instances) {
      const { snapshot } = entry;
      const createdAt = entry.history[0]?.createdAt;
      if (snapshot.machineId !== query.machineId || snapshot.status !== 'active') continue;
      if (snapshot.pausedAt !== undefined || createdAt === undefined) continue;
      const time = key(id, entry);
      if (time === null || time > dueBy) continue;
      if (
        after !== undefined &&
        (time < after.time || (time === after.time && id <= after.rootEventId))
      )
        continue;
      const fire = fireOf(id, query.timerKey) ?? null;
      if (fire !== null && fire.lastFiredAt > dueBy) continue;
      found.push({
        time,
        candidate: {
          rootEventId: id,
          createdAt,
          ...(byState ? { stateEnteredAt: time } : {}),
          fire: fire === null ? null : { ...fire },
        },
      });
    }
    found.sort(
      (a, b) =>
        a.time.localeCompare(b.time) ||
        a.candidate.rootEventId.localeCompare(b.candidate.rootEventId),
    );
    return found.slice(0, limit).map((row) => row.candidate);
  };
  return {
    async inState(query) {
      const key = (_: string, entry: MemoryCandidateView) =>
        entry.states.get(query.stateId)?.stateEnteredAt ?? null;
      return scan(query, key, query.after, query.limit, true);
    },
    async ofMachine(query) {
      const key = (_: string, entry: MemoryCandidateView) => entry.history[0]?.createdAt ?? null;
      return scan(query, key, query.after, query.limit, false);
    },
    async byIds(query) {
      const ids = new Set(query.ids);
      const key = (id: string, entry: MemoryCandidateView) =>
        ids.has(id) ? (entry.history[0]?.createdAt ?? null) : null;
      return scan(query, key, undefined, Number.MAX_SAFE_INTEGER, false);
    },
  };
}
