/**
 * The operator's reads (docs/operations.md): instances of a machine listed by state, by time or
 * by business key, one instance's row, and its history a page at a time. Reads only: nothing
 * here takes a lock or writes, except `bindBusinessKey`, which records the key once.
 *
 * Every list is keyset-paginated on an index, so a page costs the same on the millionth
 * instance as on the first:
 * - by state: `machine_current_states (machine_id, state_id, state_entered_at, root_event_id)`,
 *   the timer sweep's index, oldest entry first (who has waited longest). An ancestor state is
 *   its leaves (the only rows kept), read as one index range per leaf and merged;
 * - otherwise: `machine_instances (machine_id, created_at, root_event_id)` (migration 9),
 *   newest first;
 * - by business key: `machine_instances (machine_id, business_key)` (migration 9, unique since
 *   migration 18).
 * The time filters and `status` are checked on the rows the index yields.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import type { HistoryRecord, HistorySource } from '../interpreter/types.js';
import type { MachineTarget } from '../definition/behavior-types.js';
import { historyFromRow, type EventRow } from './rows.js';
import type { TransactionHook } from './transaction.js';

/** Where a page ends: the sort key of its last row (the engine makes it an opaque cursor). */
export interface ListPosition {
  /** `state_entered_at` (by state) or `created_at` (otherwise), ISO-8601 UTC. */
  time: string;
  rootEventId: string;
}

/** Options of `InstanceQueries.listInstances`. */
export interface InstanceListQuery {
  machineId: string;
  /**
   * Leaf state ids (full ids): instances with any of them active, oldest entry first. Omitted:
   * every instance of the machine, newest first.
   */
  stateIds?: readonly string[];
  /** Only instances with this business key (`bindBusinessKey`). */
  businessKey?: string;
  status?: 'active' | 'done';
  /** ISO-8601 UTC bounds, inclusive below and exclusive above. */
  createdFrom?: string;
  createdBefore?: string;
  updatedFrom?: string;
  updatedBefore?: string;
  /** Rows after this position in the list's order. */
  after?: ListPosition;
  limit: number;
}

/** One instance as a list shows it. */
export interface InstanceSummary {
  id: string;
  machineId: string;
  /** Active leaf states. */
  value: string[];
  status: 'active' | 'done';
  sequence: number;
  /** ISO-8601 UTC. */
  createdAt: string;
  /** ISO-8601 UTC: the last commit. */
  updatedAt: string;
  businessKey: string | null;
  parent: MachineTarget | null;
  /** When an operator paused it (ISO-8601 UTC), `null` when it is not paused. */
  pausedAt: string | null;
  /** Listed by state: the matching state and when its stay began. */
  state?: { id: string; enteredAt: string };
}

/** Options of `InstanceQueries.historyPage`. */
export interface HistoryPageQuery {
  /** `asc` (default): from the first record; `desc`: from the last. */
  order?: 'asc' | 'desc';
  /** Records after this sequence number in `order` (greater for asc, smaller for desc). */
  afterSequence?: number;
  /** Only records of this source (`external`: what callers sent; `internal`: the steps). */
  source?: HistorySource;
  limit: number;
}

/** The operator's reads of a store (see the module comment). */
export interface InstanceQueries {
  /** One page of instances, in the order `InstanceListQuery.stateIds` describes. */
  listInstances(query: InstanceListQuery): Promise<InstanceSummary[]>;
  /** The instance's row, `null` when unknown. */
  instanceSummary(rootEventId: string): Promise<InstanceSummary | null>;
  /** One page of an instance's history. */
  historyPage(rootEventId: string, query: HistoryPageQuery): Promise<HistoryRecord[]>;
  /**
   * Records the business key (a model record's key) of an instance, once: a key already set is
   * kept. `false` when the instance is unknown, has another key, or another instance of its
   * machine holds this one (keys are unique per machine, migration 18).
   */
  bindBusinessKey(rootEventId: string, businessKey: string): Promise<boolean>;
  /** The id of the instance of `machineId` bound to `businessKey`, `null` when none is. */
  instanceByBusinessKey(machineId: string, businessKey: string): Promise<string | null>;
  /**
   * The write that sets (`pausedAt`, ISO-8601) or clears (`null`) an instance's pause flag inside
   * the commit of the operator's pause or resume step, so the flag and its history record commit
   * together. `null`: the store keeps the committed snapshot's `pausedAt` itself (memory).
   */
  pauseWrite(rootEventId: string, pausedAt: string | null): TransactionHook | null;
}

/** The column order both SQL dialects select for an `InstanceSummary`. */
export const SUMMARY_COLUMNS = `i.root_event_id, i.machine_id, i.machine_value, i.status,
  i.sequence_number, i.created_at, i.updated_at, i.business_key, i.parent_machine_id,
  i.parent_root_event_id, i.paused_at`;

/** A summary row as a driver returns it (SQLite: JSON and times as text; pg: parsed, `Date`). */
export interface SummaryDbRow {
  root_event_id: string;
  machine_id: string;
  machine_value: string | string[];
  status: string;
  sequence_number: number;
  created_at: string | Date;
  updated_at: string | Date;
  business_key: string | null;
  parent_machine_id: string | null;
  parent_root_event_id: string | null;
  paused_at: string | Date | null;
  state_id?: string;
  state_entered_at?: string | Date;
}

function iso(value: string | Date): string {
  return typeof value === 'string' ? value : value.toISOString();
}

/** The `InstanceSummary` of a row. */
export function summaryFromRow(row: SummaryDbRow): InstanceSummary {
  const summary: InstanceSummary = {
    id: row.root_event_id,
    machineId: row.machine_id,
    value:
      typeof row.machine_value === 'string'
        ? (JSON.parse(row.machine_value) as string[])
        : row.machine_value,
    status: row.status === 'done' ? 'done' : 'active',
    sequence: Number(row.sequence_number),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    businessKey: row.business_key,
    parent:
      row.parent_machine_id !== null && row.parent_root_event_id !== null
        ? { machineId: row.parent_machine_id, id: row.parent_root_event_id }
        : null,
    pausedAt: row.paused_at === null ? null : iso(row.paused_at),
  };
  if (row.state_id !== undefined && row.state_entered_at !== undefined)
    summary.state = { id: row.state_id, enteredAt: iso(row.state_entered_at) };
  return summary;
}

/** Builds parameterized SQL for one dialect: `?` (SQLite) or `$n` (PostgreSQL). */
export class SqlParameters {
  readonly values: unknown[] = [];
  readonly #numbered: boolean;

  constructor(dialect: 'sqlite' | 'postgres') {
    this.#numbered = dialect === 'postgres';
  }

  /** The placeholder of `value`, added to `values`. */
  add(value: unknown): string {
    this.values.push(value);
    return this.#numbered ? `$${this.values.length}` : '?';
  }
}

/** Runs one read statement. */
export type SqlReader = (sql: string, params: readonly unknown[]) => Promise<unknown[]>;

/** `InstanceQueries` in SQL, the same statements on SQLite and PostgreSQL. */
export class SqlInstanceQueries implements InstanceQueries {
  readonly #dialect: 'sqlite' | 'postgres';
  readonly #read: SqlReader;
  readonly #write: (sql: string, params: readonly unknown[]) => Promise<number>;

  constructor(
    dialect: 'sqlite' | 'postgres',
    read: SqlReader,
    write: (sql: string, params: readonly unknown[]) => Promise<number>,
  ) {
    this.#dialect = dialect;
    this.#read = read;
    this.#write = write;
  }

  async listInstances(query: InstanceListQuery): Promise<InstanceSummary[]> {
    const params = new SqlParameters(this.#dialect);
    const stateIds = query.stateIds;
    if (stateIds !== undefined && stateIds.length === 0) return [];
    const sql =
      stateIds === undefined
        ? this.#byCreation(query, params)
        : this.#byState(query, stateIds, params);
    const rows = (await this.#read(sql, params.values)) as SummaryDbRow[];
    return rows.map(summaryFromRow);
  }

  // Newest first on (machine_id, created_at, root_event_id); by key on (machine_id, business_key).
  #byCreation(query: InstanceListQuery, params: SqlParameters): string {
    const where = [
      `i.machine_id = ${params.add(query.machineId)}`,
      ...this.#filters(query, params),
    ];
    if (query.after !== undefined) {
      where.push(
        `(i.created_at, i.root_event_id) < (${this.#time(params, query.after.time)}, ${params.add(query.after.rootEventId)})`,
      );
    }
    return `SELECT ${SUMMARY_COLUMNS} FROM machine_instances i WHERE ${where.join(' AND ')}
      ORDER BY i.created_at DESC, i.root_event_id DESC LIMIT ${params.add(query.limit)}`;
  }

  // One index range per leaf state, each already ordered and limited, merged by the outer sort.
  #byState(query: InstanceListQuery, stateIds: readonly string[], params: SqlParameters): string {
    const parts = stateIds.map((stateId) => {
      const where = [
        `cs.machine_id = ${params.add(query.machineId)}`,
        `cs.state_id = ${params.add(stateId)}`,
        ...this.#filters(query, params),
      ];
      if (query.after !== undefined) {
        where.push(
          `(cs.state_entered_at, cs.root_event_id) > (${this.#time(params, query.after.time)}, ${params.add(query.after.rootEventId)})`,
        );
      }
      return `SELECT * FROM (SELECT ${SUMMARY_COLUMNS}, cs.state_id, cs.state_entered_at
        FROM machine_current_states cs JOIN machine_instances i ON i.root_event_id = cs.root_event_id
        WHERE ${where.join(' AND ')}
        ORDER BY cs.state_entered_at, cs.root_event_id LIMIT ${params.add(query.limit)}) s${params.values.length}`;
    });
    if (parts.length === 1) return parts[0]!;
    return `SELECT * FROM (${parts.join(' UNION ALL ')}) merged
      ORDER BY state_entered_at, root_event_id LIMIT ${params.add(query.limit)}`;
  }

  #filters(query: InstanceListQuery, params: SqlParameters): string[] {
    const where: string[] = [];
    if (query.businessKey !== undefined)
      where.push(`i.business_key = ${params.add(query.businessKey)}`);
    if (query.status !== undefined) where.push(`i.status = ${params.add(query.status)}`);
    if (query.createdFrom !== undefined)
      where.push(`i.created_at >= ${this.#time(params, query.createdFrom)}`);
    if (query.createdBefore !== undefined)
      where.push(`i.created_at < ${this.#time(params, query.createdBefore)}`);
    if (query.updatedFrom !== undefined)
      where.push(`i.updated_at >= ${this.#time(params, query.updatedFrom)}`);
    if (query.updatedBefore !== undefined)
      where.push(`i.updated_at < ${this.#time(params, query.updatedBefore)}`);
    return where;
  }

  // ISO text compares as time in SQLite; PostgreSQL needs the cast for a row comparison.
  #time(params: SqlParameters, value: string): string {
    const placeholder = params.add(value);
    return this.#dialect === 'postgres' ? `${placeholder}::timestamptz` : placeholder;
  }

  async instanceSummary(rootEventId: string): Promise<InstanceSummary | null> {
    const params = new SqlParameters(this.#dialect);
    const rows = (await this.#read(
      `SELECT ${SUMMARY_COLUMNS} FROM machine_instances i WHERE i.root_event_id = ${params.add(rootEventId)}`,
      params.values,
    )) as SummaryDbRow[];
    return rows[0] === undefined ? null : summaryFromRow(rows[0]);
  }

  async historyPage(rootEventId: string, query: HistoryPageQuery): Promise<HistoryRecord[]> {
    const params = new SqlParameters(this.#dialect);
    const descending = query.order === 'desc';
    const where = [`root_event_id = ${params.add(rootEventId)}`];
    if (query.afterSequence !== undefined) {
      where.push(`sequence_number ${descending ? '<' : '>'} ${params.add(query.afterSequence)}`);
    }
    if (query.source !== undefined) where.push(`source = ${params.add(query.source)}`);
    const rows = await this.#read(
      `SELECT * FROM machine_events WHERE ${where.join(' AND ')}
        ORDER BY sequence_number ${descending ? 'DESC' : 'ASC'} LIMIT ${params.add(query.limit)}`,
      params.values,
    );
    return (rows as EventRow[]).map(historyFromRow);
  }

  async bindBusinessKey(rootEventId: string, businessKey: string): Promise<boolean> {
    const params = new SqlParameters(this.#dialect);
    try {
      const changed = await this.#write(
        `UPDATE machine_instances SET business_key = ${params.add(businessKey)}
          WHERE root_event_id = ${params.add(rootEventId)}
            AND (business_key IS NULL OR business_key = ${params.add(businessKey)})`,
        params.values,
      );
      return changed === 1;
    } catch (error) {
      // Another instance of the machine holds the key (the unique index): this one keeps none.
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async instanceByBusinessKey(machineId: string, businessKey: string): Promise<string | null> {
    const params = new SqlParameters(this.#dialect);
    const rows = (await this.#read(
      `SELECT root_event_id FROM machine_instances
        WHERE machine_id = ${params.add(machineId)} AND business_key = ${params.add(businessKey)}`,
      params.values,
    )) as { root_event_id: string }[];
    return rows[0]?.root_event_id ?? null;
  }

  pauseWrite(rootEventId: string, pausedAt: string | null): TransactionHook {
    return (transaction) => {
      if (transaction.kind === 'sqlite') {
        transaction.database
          .prepare('UPDATE machine_instances SET paused_at = ? WHERE root_event_id = ?')
          .run(pausedAt, rootEventId);
        return;
      }
      return transaction.client
        .query('UPDATE machine_instances SET paused_at = $1 WHERE root_event_id = $2', [
          pausedAt,
          rootEventId,
        ])
        .then(() => undefined);
    };
  }
}

// SQLite's extended code or PostgreSQL's SQLSTATE of a unique index refusing a write.
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/** `InstanceQueries` on a SQLite connection (statements prepared once per distinct text). */
export function sqliteInstanceQueries(db: Database.Database): SqlInstanceQueries {
  const prepared = new Map<string, Database.Statement>();
  const statement = (sql: string): Database.Statement => {
    let found = prepared.get(sql);
    if (found === undefined) {
      found = db.prepare(sql);
      prepared.set(sql, found);
    }
    return found;
  };
  return new SqlInstanceQueries(
    'sqlite',
    async (sql, params) => statement(sql).all(...params),
    async (sql, params) => statement(sql).run(...params).changes,
  );
}

/** `InstanceQueries` on a PostgreSQL pool. */
export function postgresInstanceQueries(pool: pg.Pool): SqlInstanceQueries {
  return new SqlInstanceQueries(
    'postgres',
    async (sql, params) => (await pool.query(sql, [...params])).rows,
    async (sql, params) => (await pool.query(sql, [...params])).rowCount ?? 0,
  );
}
