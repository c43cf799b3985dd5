/**
 * What a deploy must be compatible with: the states live instances sit in, the event types of
 * persisted histories, and stored contexts. Read-only aggregate queries for
 * `machine-routes check --database` (engine/deploy-check.ts compares them with definitions).
 */
import type { MachineSnapshot } from '../interpreter/types.js';
import { snapshotFromRow, type InstanceRow } from './rows.js';
import type { Store } from './store.js';
import type { SqliteStore } from './sqlite-store.js';
import type { PostgresStore } from './postgres-store.js';

/** Instances of a machine in one state, by status. */
export interface LiveStateCount {
  machineId: string;
  stateId: string;
  active: number;
  done: number;
  /** The version that last wrote these instances (`null`: before versions were recorded). */
  version?: string | null;
  /** One of these instances (the smallest id), for messages. */
  example?: string;
}

/** An external event type found in a machine's persisted histories. */
export interface HistoryEventCount {
  machineId: string;
  type: string;
  count: number;
}

/** Stored contexts of a machine's instances (the most recently updated first). */
export interface StoredContexts {
  machineId: string;
  contexts: Record<string, unknown>[];
  /** The same sample as snapshots (id, states, version): the migration dry run's input. */
  instances?: MachineSnapshot[];
}

/** Active (pending or running) child rows of one delegating state of a machine's instances. */
export interface LiveChildCount {
  /** The parent's machine and delegating state. */
  machineId: string;
  stateId: string;
  /** The version that last wrote the parents (`null`: before versions were recorded). */
  version: string | null;
  /** The child machine's id, or the job's name. */
  childMachineId: string;
  count: number;
  /** One parent instance (the smallest id), for messages. */
  example: string;
}

/** The live data of a store, for the machines given. */
export interface LiveInstances {
  states: LiveStateCount[];
  events: HistoryEventCount[];
  contexts: StoredContexts[];
  /** Active child rows by delegating state (absent: not read). */
  children?: LiveChildCount[];
}

const STATES = `SELECT s.machine_id, s.state_id, i.definition_version,
    SUM(CASE WHEN i.status = 'active' THEN 1 ELSE 0 END) AS active,
    SUM(CASE WHEN i.status = 'done' THEN 1 ELSE 0 END) AS done,
    MIN(i.root_event_id) AS example
  FROM machine_current_states s JOIN machine_instances i ON i.root_event_id = s.root_event_id
  GROUP BY s.machine_id, s.state_id, i.definition_version
  ORDER BY s.machine_id, s.state_id, i.definition_version`;
const CHILDREN = `SELECT c.parent_machine_id, c.parent_state_id, i.definition_version,
    c.child_machine_id, COUNT(*) AS count, MIN(c.parent_root_event_id) AS example
  FROM machine_children c JOIN machine_instances i ON i.root_event_id = c.parent_root_event_id
  WHERE c.status IN ('pending', 'running')
  GROUP BY c.parent_machine_id, c.parent_state_id, i.definition_version, c.child_machine_id
  ORDER BY c.parent_machine_id, c.parent_state_id, i.definition_version, c.child_machine_id`;
const SAMPLE_COLUMNS = `root_event_id, machine_id, machine_value, context, status, sequence_number,
    parent_machine_id, parent_root_event_id, definition_version`;
const EVENTS = `SELECT machine_id, type, COUNT(*) AS count FROM machine_events
  WHERE source = 'external' GROUP BY machine_id, type ORDER BY machine_id, type`;

/**
 * Reads the live data of `machineIds` (other machines' rows are left out). Contexts: at most
 * `contextLimit` per machine (default 10,000), most recently updated first.
 */
export async function readLiveInstances(
  store: Store,
  machineIds: readonly string[],
  options: { contextLimit?: number } = {},
): Promise<LiveInstances> {
  const limit = options.contextLimit ?? 10_000;
  const wanted = new Set(machineIds);
  type StateRow = {
    machine_id: string;
    state_id: string;
    active: number | string;
    done: number | string;
    definition_version: string | null;
    example: string;
  };
  type EventRow = { machine_id: string; type: string; count: number | string };
  type ChildRow = {
    parent_machine_id: string;
    parent_state_id: string;
    definition_version: string | null;
    child_machine_id: string;
    count: number | string;
    example: string;
  };
  let stateRows: StateRow[];
  let eventRows: EventRow[];
  let childRows: ChildRow[];
  const contexts: StoredContexts[] = [];
  if (store.kind === 'sqlite') {
    const db = (store as SqliteStore).database;
    stateRows = db.prepare(STATES).all() as StateRow[];
    eventRows = db.prepare(EVENTS).all() as EventRow[];
    childRows = db.prepare(CHILDREN).all() as ChildRow[];
    const read = db.prepare(
      `SELECT ${SAMPLE_COLUMNS} FROM machine_instances WHERE machine_id = ? ORDER BY updated_at DESC LIMIT ?`,
    );
    for (const machineId of wanted) {
      const instances = (read.all(machineId, limit) as InstanceRow[]).map(snapshotFromRow);
      contexts.push({ machineId, contexts: instances.map((one) => one.context), instances });
    }
  } else if (store.kind === 'postgres') {
    const pool = (store as PostgresStore).pool;
    stateRows = (await pool.query<StateRow>(STATES)).rows;
    eventRows = (await pool.query<EventRow>(EVENTS)).rows;
    childRows = (await pool.query<ChildRow>(CHILDREN)).rows;
    for (const machineId of wanted) {
      const rows = await pool.query<InstanceRow>(
        `SELECT ${SAMPLE_COLUMNS} FROM machine_instances WHERE machine_id = $1 ORDER BY updated_at DESC LIMIT $2`,
        [machineId, limit],
      );
      const instances = rows.rows.map(snapshotFromRow);
      contexts.push({ machineId, contexts: instances.map((one) => one.context), instances });
    }
  } else {
    throw new Error('Live instances are read from a SQLite or PostgreSQL store.');
  }
  return {
    states: stateRows
      .filter((row) => wanted.has(row.machine_id))
      .map((row) => ({
        machineId: row.machine_id,
        stateId: row.state_id,
        active: Number(row.active),
        done: Number(row.done),
        version: row.definition_version,
        example: row.example,
      })),
    children: childRows
      .filter((row) => wanted.has(row.parent_machine_id))
      .map((row) => ({
        machineId: row.parent_machine_id,
        stateId: row.parent_state_id,
        version: row.definition_version,
        childMachineId: row.child_machine_id,
        count: Number(row.count),
        example: row.example,
      })),
    events: eventRows
      .filter((row) => wanted.has(row.machine_id))
      .map((row) => ({ machineId: row.machine_id, type: row.type, count: Number(row.count) })),
    contexts,
  };
}

/** Options of {@link readInstancePage}. */
export interface InstancePageQuery {
  machineId: string;
  /** Only instances with a greater id (keyset paging in id order). */
  afterId?: string;
  limit: number;
}

/**
 * A page of a machine's stored snapshots in id order (the primary key), for the eager
 * migration (`machine-routes instances migrate`) and the deploy check's dry run.
 */
export async function readInstancePage(
  store: Store,
  query: InstancePageQuery,
): Promise<MachineSnapshot[]> {
  const columns = `root_event_id, machine_id, machine_value, context, status, sequence_number,
    parent_machine_id, parent_root_event_id, definition_version`;
  if (store.kind === 'sqlite') {
    const rows = (store as SqliteStore).database
      .prepare(
        `SELECT ${columns} FROM machine_instances WHERE machine_id = ? AND root_event_id > ?
          ORDER BY root_event_id LIMIT ?`,
      )
      .all(query.machineId, query.afterId ?? '', query.limit) as InstanceRow[];
    return rows.map(snapshotFromRow);
  }
  if (store.kind === 'postgres') {
    const result = await (store as PostgresStore).pool.query<InstanceRow>(
      `SELECT ${columns} FROM machine_instances WHERE machine_id = $1 AND root_event_id COLLATE "C" > $2
        ORDER BY root_event_id COLLATE "C" LIMIT $3`,
      [query.machineId, query.afterId ?? '', query.limit],
    );
    return result.rows.map(snapshotFromRow);
  }
  throw new Error('Instances are paged from a SQLite or PostgreSQL store.');
}
