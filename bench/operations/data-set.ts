/**
 * The operations benchmark's data set, generated in the database by one statement per table (not
 * committed, dropped after each run): `count` instances of the `bench` machine spread over its
 * five leaf states, one start and one event record each, and one instance (`LONG_HISTORY_ID`)
 * with `LONG_HISTORY` more records for the history pages.
 */
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { defineMachine } from '../../src/runtime/definition/index.js';

/** Five leaves, two of them inside `group` (the ancestor case). */
export const benchMachine = defineMachine({
  config: {
    id: 'bench',
    initial: 's0',
    states: {
      s0: { on: { NEXT: 'group' } },
      group: { initial: 's1', states: { s1: { on: { NEXT: 's2' } }, s2: {} }, on: { OUT: 's3' } },
      s3: { on: { NEXT: 's4' } },
      s4: {},
    },
  },
});

export const LEAVES = ['bench.s0', 'bench.group.s1', 'bench.group.s2', 'bench.s3', 'bench.s4'];
/** Extra history records of one instance. */
export const LONG_HISTORY = 1000;
/** Epoch seconds of the first instance's creation; instance i is created i seconds later. */
const BASE = Date.parse('2026-01-01T00:00:00.000Z') / 1000;

/** The id of instance `index` (26 characters, ordered like the index). */
export function instanceId(index: number): string {
  return `BENCH${String(index).padStart(21, '0')}`;
}

/** The instance with the long history: the middle one. */
export function longHistoryId(count: number): string {
  return instanceId(Math.floor(count / 2));
}

/** Writes the data set into a migrated SQLite store. */
export function generateSqlite(store: SqliteStore, count: number): void {
  const db = store.database;
  const series = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})`;
  const leaf = `CASE i % 5 ${LEAVES.map((id, index) => `WHEN ${index} THEN '${id}'`).join(' ')} END`;
  const at = (offset: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${BASE} + ${offset}, 'unixepoch')`;
  const id = `'BENCH' || printf('%021d', i)`;
  db.transaction(() => {
    db.exec(`${series} INSERT INTO machine_instances
      (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
      SELECT ${id}, 'bench', json_array(${leaf}), '{}', 'active', 2, ${at('i')}, ${at('i + 60')} FROM n`);
    // Entry times are not in creation order (i % 7 seconds apart), as after real traffic.
    db.exec(`${series} INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
      SELECT ${id}, 'bench', ${leaf}, ${at('i + (i % 7) * 30')} FROM n`);
    for (const [sequence, source, type] of [
      [1, 'internal', 'bench.start'],
      [2, 'external', 'NEXT'],
    ] as const) {
      db.exec(`${series} INSERT INTO machine_events
        (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
        SELECT ${id} || '-${sequence}', ${sequence}, ${at('i')}, 'bench', ${id}, '${source}', '${type}', json_array(${leaf}), 1 FROM n`);
    }
    const long = longHistoryId(count);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < ${LONG_HISTORY + 2})
      INSERT INTO machine_events (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
      SELECT '${long}-' || i, i, ${at('i')}, 'bench', '${long}', CASE i % 4 WHEN 0 THEN 'external' ELSE 'internal' END,
        'bench.step', '[]', 1 FROM n`);
  })();
  db.exec('ANALYZE');
}

/** Writes the data set into a migrated PostgreSQL store. */
export async function generatePostgres(store: PostgresStore, count: number): Promise<void> {
  const leaf = `(ARRAY[${LEAVES.map((id) => `'${id}'`).join(', ')}])[i % 5 + 1]`;
  const at = (offset: string) => `to_timestamp(${BASE} + ${offset})`;
  const id = `'BENCH' || lpad(i::text, 21, '0')`;
  const series = `FROM generate_series(0, ${count - 1}) AS i`;
  const pool = store.pool;
  await pool.query(`INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
    SELECT ${id}, 'bench', json_build_array(${leaf}), '{}', 'active', 2, ${at('i')}, ${at('i + 60')} ${series}`);
  await pool.query(`INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
    SELECT ${id}, 'bench', ${leaf}, ${at('i + (i % 7) * 30')} ${series}`);
  await pool.query(`INSERT INTO machine_events
    (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
    SELECT ${id} || '-' || s, s, ${at('i')}, 'bench', ${id}, CASE s WHEN 1 THEN 'internal' ELSE 'external' END,
      CASE s WHEN 1 THEN 'bench.start' ELSE 'NEXT' END, json_build_array(${leaf}), 1
    ${series}, generate_series(1, 2) AS s`);
  const long = longHistoryId(count);
  await pool.query(`INSERT INTO machine_events
    (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
    SELECT '${long}-' || i, i, ${at('i')}, 'bench', '${long}', CASE i % 4 WHEN 0 THEN 'external' ELSE 'internal' END,
      'bench.step', '[]', 1 FROM generate_series(3, ${LONG_HISTORY + 2}) AS i`);
  // Vacuumed as autovacuum would leave a settled table (visibility map set, so the list pages are
  // index-only scans), instead of measuring while autovacuum works through 3,000,000 new rows.
  await pool.query('VACUUM ANALYZE machine_instances, machine_current_states, machine_events');
}
