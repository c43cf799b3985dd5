/**
 * The growth benchmark's data set (growth.ts), generated in the database by a few statements per
 * table and deleted after the run: `count` instances of the operations benchmark's `bench`
 * machine (bench/operations/data-set.ts: five leaves, spread evenly), each with `history`
 * history records, and their current-state rows.
 *
 * Ids differ from the operations data set's: these are valid instance ids (`0GRWTH` and 20
 * digits: a ULID's alphabet, first character 0), so the runtime's sends and reads take them.
 * The instances are `scaleMachine`, the bench machine with a targetless `TICK` on its root that
 * counts in the context, which every instance accepts forever.
 */
import { defineMachine } from '../../src/runtime/definition/index.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { LEAVES } from '../operations/data-set.js';

/**
 * `bench` (bench/operations/data-set.ts, whose LEAVES the rows use) with `TICK` on its root: same
 * id and state tree, so the generated rows are its instances.
 */
export const scaleMachine = defineMachine<{ ticks?: number }>({
  config: {
    id: 'bench',
    initial: 's0',
    on: { TICK: { actions: 'tick' } },
    states: {
      s0: { on: { NEXT: 'group' } },
      group: { initial: 's1', states: { s1: { on: { NEXT: 's2' } }, s2: {} }, on: { OUT: 's3' } },
      s3: { on: { NEXT: 's4' } },
      s4: {},
    },
  },
  behavior: {
    actions: {
      tick: ({ context }) => {
        context.ticks = (context.ticks ?? 0) + 1;
      },
    },
  },
});

/** Epoch seconds of the first instance's creation; instance i is created i seconds later. */
const BASE = Date.parse('2025-01-01T00:00:00.000Z') / 1000;

/** The id of instance `index`. */
export function scaleId(index: number): string {
  return `0GRWTH${String(index).padStart(20, '0')}`;
}

/** Writes the data set into a migrated SQLite store. */
export function generateSqlite(store: SqliteStore, count: number, history: number): void {
  const db = store.database;
  const series = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})`;
  const leaf = `CASE i % 5 ${LEAVES.map((id, index) => `WHEN ${index} THEN '${id}'`).join(' ')} END`;
  const at = (offset: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${BASE} + ${offset}, 'unixepoch')`;
  const id = `'0GRWTH' || printf('%020d', i)`;
  db.transaction(() => {
    db.exec(`${series} INSERT INTO machine_instances
      (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
      SELECT ${id}, 'bench', json_array(${leaf}), '{}', 'active', ${history}, ${at('i')}, ${at('i + 60')} FROM n`);
    db.exec(`${series} INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
      SELECT ${id}, 'bench', ${leaf}, ${at('i + (i % 7) * 30')} FROM n`);
  })();
  // One statement per sequence number, each its own transaction: the WAL stays a few hundred MB.
  for (let sequence = 1; sequence <= history; sequence += 1) {
    const type = sequence === 1 ? `'bench.start'` : `'NEXT'`;
    const source = sequence === 1 ? `'internal'` : `'external'`;
    db.exec(`${series} INSERT INTO machine_events
      (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
      SELECT ${id} || '-${sequence}', ${sequence}, ${at(`i + ${sequence}`)}, 'bench', ${id}, ${source}, ${type},
        json_array(${leaf}), 1 FROM n`);
  }
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
}

/** Writes the data set into a migrated PostgreSQL store. */
export async function generatePostgres(
  store: PostgresStore,
  count: number,
  history: number,
): Promise<void> {
  const leaf = `(ARRAY[${LEAVES.map((id) => `'${id}'`).join(', ')}])[i % 5 + 1]`;
  const at = (offset: string) => `to_timestamp(${BASE} + ${offset})`;
  const id = `'0GRWTH' || lpad(i::text, 20, '0')`;
  const series = `FROM generate_series(0, ${count - 1}) AS i`;
  const pool = store.pool;
  await pool.query(`INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
    SELECT ${id}, 'bench', json_build_array(${leaf}), '{}', 'active', ${history}, ${at('i')}, ${at('i + 60')} ${series}`);
  await pool.query(`INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
    SELECT ${id}, 'bench', ${leaf}, ${at('i + (i % 7) * 30')} ${series}`);
  // In sequence order per statement, as real traffic interleaves instances over time.
  for (let sequence = 1; sequence <= history; sequence += 1) {
    await pool.query(`INSERT INTO machine_events
      (id, sequence_number, created_at, machine_id, root_event_id, source, type, machine_value, version)
      SELECT ${id} || '-${sequence}', ${sequence}, ${at(`i + ${sequence}`)}, 'bench', ${id},
        ${sequence === 1 ? `'internal'` : `'external'`}, ${sequence === 1 ? `'bench.start'` : `'NEXT'`},
        json_build_array(${leaf}), 1 ${series}`);
  }
  await pool.query('VACUUM ANALYZE');
}
