/**
 * What a deploy must be compatible with: the states live instances sit in, the event types of
 * persisted histories, and stored contexts. Read-only aggregate queries for
 * `machine-routes check --database` (engine/deploy-check.ts compares them with definitions).
 */
import type { Store } from './store.js';
import type { SqliteStore } from './sqlite-store.js';
import type { PostgresStore } from './postgres-store.js';

/** Instances of a machine in one state, by status. */
export interface LiveStateCount {
  machineId: string;
  stateId: string;
  active: number;
  done: number;
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
}

/** The live data of a store, for the machines given. */
export interface LiveInstances {
  states: LiveStateCount[];
  events: HistoryEventCount[];
  contexts: StoredContexts[];
}

const STATES = `SELECT s.machine_id, s.state_id,
    SUM(CASE WHEN i.status = 'active' THEN 1 ELSE 0 END) AS active,
    SUM(CASE WHEN i.status = 'done' THEN 1 ELSE 0 END) AS done
  FROM machine_current_states s JOIN machine_instances i ON i.root_event_id = s.root_event_id
  GROUP BY s.machine_id, s.state_id ORDER BY s.machine_id, s.state_id`;
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
  };
  type EventRow = { machine_id: string; type: string; count: number | string };
  let stateRows: StateRow[];
  let eventRows: EventRow[];
  const contexts: StoredContexts[] = [];
  if (store.kind === 'sqlite') {
    const db = (store as SqliteStore).database;
    stateRows = db.prepare(STATES).all() as StateRow[];
    eventRows = db.prepare(EVENTS).all() as EventRow[];
    const read = db.prepare(
      'SELECT context FROM machine_instances WHERE machine_id = ? ORDER BY updated_at DESC LIMIT ?',
    );
    for (const machineId of wanted) {
      const rows = read.all(machineId, limit) as { context: string }[];
      contexts.push({ machineId, contexts: rows.map((row) => JSON.parse(row.context)) });
    }
  } else if (store.kind === 'postgres') {
    const pool = (store as PostgresStore).pool;
    stateRows = (await pool.query<StateRow>(STATES)).rows;
    eventRows = (await pool.query<EventRow>(EVENTS)).rows;
    for (const machineId of wanted) {
      const rows = await pool.query<{ context: Record<string, unknown> }>(
        'SELECT context FROM machine_instances WHERE machine_id = $1 ORDER BY updated_at DESC LIMIT $2',
        [machineId, limit],
      );
      contexts.push({ machineId, contexts: rows.rows.map((row) => row.context) });
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
      })),
    events: eventRows
      .filter((row) => wanted.has(row.machine_id))
      .map((row) => ({ machineId: row.machine_id, type: row.type, count: Number(row.count) })),
    contexts,
  };
}
