/**
 * Timers as the pending set grows: the sweep's cost per due timer with 1,000 and with 100,000
 * timers pending, on SQLite and PostgreSQL, in one run, and the plans of the candidate query:
 * `npx tsx bench/scale/timers.ts`.
 *
 * Each set is instances of a machine waiting in a state with a 1,000 s `after` timer, entered
 * 10 ms apart, and as many fire rows of that timer left by instances that moved on (seeded with SQL into a SQLite file, or a schema of a private PostgreSQL cluster,
 * private-postgres.ts; MACHINE_ROUTES_BENCH_PG_URL instead runs on that server). A round moves
 * each set's manual clock on so that DUE timers become due (what the worker's 500 ms sweep finds
 * at 100,000 pending and 1% due per minute: 8 to 9) and runs one sweep, which delivers them;
 * rounds alternate the two sets, the order swapped each round. Reported, medians: the sweep's wall
 * time and CPU time per delivered timer (this process; and the cluster's, when private), the idle
 * sweep (nothing due), and the ratio 100,000 / 1,000. Then the candidate query's plan on the
 * large set, EXPLAIN QUERY PLAN on SQLite and EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL, with the
 * parameters of the last sweep: an index range over the due entries, no scan of the table.
 *
 * Environment: BENCH_SMALL (1000), BENCH_LARGE (100000), BENCH_DUE (per sweep, 10),
 * BENCH_ROUNDS (15).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ManualClock } from '../../src/runtime/clock.js';
import { defineMachine } from '../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { sweepTimers } from '../../src/runtime/engine/timers/timer-sweep.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../src/runtime/persistence/store.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

const SMALL = Number(process.env.BENCH_SMALL ?? 1000);
const LARGE = Number(process.env.BENCH_LARGE ?? 100_000);
const DUE = Number(process.env.BENCH_DUE ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const SPACING_MS = 10;
const TIMER_S = 1000;
const BASE = Date.parse('2026-01-01T00:00:00.000Z');

const waiting = defineMachine({
  config: {
    id: 'bench_timer',
    initial: 'waiting',
    states: {
      waiting: { on: { EXPIRE: { target: 'expired', after: TIMER_S } } },
      expired: { type: 'final' },
    },
  },
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

// The candidate query's text and parameters, caught on their way to the driver: the first query
// of the sweep after `catching` is set (the last round's, which finds the due timers).
const caught: { sqlite?: { text: string; values: unknown[] }; pg?: pg.QueryConfig } = {};
let catching = false;
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database.Database, source: string) {
  const statement = prepare.call(this, source) as Database.Statement;
  if (!source.includes('LEFT JOIN machine_timer_fires')) return statement as never;
  const all = statement.all.bind(statement);
  statement.all = ((...values: unknown[]) => {
    if (catching) caught.sqlite = { text: source, values };
    catching = false;
    return all(...values);
  }) as never;
  return statement as never;
} as never;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as pg.QueryConfig | string;
  if (catching && typeof config === 'object' && config.name === 'mr_timerCandidates') {
    caught.pg = config;
    catching = false;
  }
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

/**
 * The last sweep's candidate-query parameters moved on to the next DUE timers (`dueBy` is the
 * fourth parameter in both dialects; SQLite repeats it): the plan is shown on a query that
 * finds rows, as the last sweep's did before it delivered them.
 */
function nextDue(values: readonly unknown[]): unknown[] {
  const dueBy = values[3];
  const at = dueBy instanceof Date ? dueBy.getTime() : Date.parse(String(dueBy));
  const next = new Date(at + DUE * SPACING_MS);
  return values.map((value) =>
    value === dueBy ? (dueBy instanceof Date ? next : next.toISOString()) : value,
  );
}

/** The timer's key in `machine_timer_fires` (state, event, delay). */
const TIMER_KEY = `bench_timer.waiting:EXPIRE:${TIMER_S}`;

/**
 * Seeds `count` waiting instances, `SPACING_MS` apart, and `count` fire rows of the same timer
 * in other instances, with one statement per table.
 */
async function seed(store: Store, count: number): Promise<void> {
  const id = (i: string, prefix = '0TMR') =>
    store.kind === 'sqlite'
      ? `'${prefix}' || printf('%022d', ${i})`
      : `'${prefix}' || lpad(${i}::text, 22, '0')`;
  // As many fire rows of instances that left the state since: they are never deleted, so a
  // live database holds one per instance that ever ran the timer, and the plan must not read
  // them all.
  const fired = (i: string) => id(i, '0TMF');
  if (store.kind === 'sqlite') {
    const db = (store as SqliteStore).database;
    const series = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})`;
    const at = `strftime('%Y-%m-%dT%H:%M:%fZ', ${BASE / 1000} + i * ${SPACING_MS / 1000}, 'unixepoch')`;
    db.transaction(() => {
      db.exec(`${series} INSERT INTO machine_instances (root_event_id, machine_id, machine_value, context,
        status, sequence_number, created_at, updated_at)
        SELECT ${id('i')}, 'bench_timer', '["bench_timer.waiting"]', '{}', 'active', 1, ${at}, ${at} FROM n`);
      db.exec(`${series} INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
        SELECT ${id('i')}, 'bench_timer', 'bench_timer.waiting', ${at} FROM n`);
      db.exec(`${series} INSERT INTO machine_timer_fires (root_event_id, timer_key, state_entered_at,
        last_fired_at, fire_count, status)
        SELECT ${fired('i')}, '${TIMER_KEY}', ${at}, ${at}, 1, 'fired' FROM n`);
    })();
    db.exec('ANALYZE');
    return;
  }
  const pool = (store as PostgresStore).pool;
  const series = `FROM generate_series(0, ${count - 1}) AS i`;
  const at = `to_timestamp(${BASE / 1000} + i * ${SPACING_MS / 1000})`;
  await pool.query(`INSERT INTO machine_instances (root_event_id, machine_id, machine_value, context,
    status, sequence_number, created_at, updated_at)
    SELECT ${id('i')}, 'bench_timer', '["bench_timer.waiting"]', '{}', 'active', 1, ${at}, ${at} ${series}`);
  await pool.query(`INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
    SELECT ${id('i')}, 'bench_timer', 'bench_timer.waiting', ${at} ${series}`);
  await pool.query(`INSERT INTO machine_timer_fires (root_event_id, timer_key, state_entered_at,
    last_fired_at, fire_count, status)
    SELECT ${fired('i')}, '${TIMER_KEY}', ${at}, ${at}, 1, 'fired' ${series}`);
  await pool.query('VACUUM ANALYZE');
}

interface TimerSet {
  count: number;
  runtime: MachineRuntime;
  clock: ManualClock;
  wall: number[];
  cpu: number[];
  db: number[];
  idle: number[];
}

async function open(url: string, count: number): Promise<TimerSet> {
  const store = await openStore(url, { migrate: true });
  await seed(store, count);
  // The first timer falls due 1 ms after the clock's start.
  const clock = new ManualClock(BASE + TIMER_S * 1000 - 1);
  return {
    count,
    runtime: new MachineRuntime({ store, machines: [waiting] }),
    clock,
    wall: [],
    cpu: [],
    db: [],
    idle: [],
  };
}

async function sweep(set: TimerSet, dbMicros: () => number | null, due: number) {
  const cpuBefore = cpuMicros();
  const dbBefore = dbMicros();
  const started = performance.now();
  const report = await sweepTimers({
    context: set.runtime.context,
    registrations: [{ machine: waiting }],
    clock: set.clock,
  });
  const wall = performance.now() - started;
  if (report.delivered !== due)
    throw new Error(`${set.count}: delivered ${report.delivered}, expected ${due}`);
  const dbAfter = dbMicros();
  const cpu = cpuMicros() - cpuBefore;
  const db = dbBefore === null || dbAfter === null ? NaN : dbAfter - dbBefore;
  return { wall: wall * 1000, cpu, db };
}

async function compare(label: string, sets: [TimerSet, TimerSet], dbMicros: () => number | null) {
  for (let round = 0; round < ROUNDS + 1; round += 1) {
    for (const set of round % 2 === 0 ? sets : [sets[1], sets[0]]) {
      const idle = await sweep(set, dbMicros, 0);
      set.clock.advance(DUE * SPACING_MS);
      catching = round === ROUNDS && set === sets[1];
      const result = await sweep(set, dbMicros, DUE);
      // Round 0 warms the statement caches up.
      if (round === 0) continue;
      set.idle.push(idle.wall);
      set.wall.push(result.wall / DUE);
      set.cpu.push(result.cpu / DUE);
      set.db.push(result.db / DUE);
    }
  }
  console.log(
    `\n${label}: ${DUE} due per sweep, medians of ${ROUNDS} rounds, load average ${load()}`,
  );
  console.log('pending   idle sweep us  per due: wall us  process CPU us  database CPU us');
  for (const set of sets) {
    console.log(
      `${String(set.count).padStart(7)}   ${median(set.idle).toFixed(0).padStart(13)}  ${median(set.wall).toFixed(0).padStart(16)}  ${median(set.cpu).toFixed(0).padStart(14)}  ${median(set.db).toFixed(0).padStart(15)}`,
    );
  }
  const ratio = (key: 'idle' | 'wall' | 'cpu' | 'db') =>
    (median(sets[1][key]) / median(sets[0][key])).toFixed(2);
  console.log(
    `  ratio   ${ratio('idle').padStart(12)}x  ${ratio('wall').padStart(15)}x  ${ratio('cpu').padStart(13)}x  ${ratio('db').padStart(14)}x`,
  );
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mr-bench-scale-timers-'));
  const sets: TimerSet[] = [];
  try {
    for (const count of [SMALL, LARGE])
      sets.push(await open(`sqlite:${join(dir, `${count}.db`)}`, count));
    await compare('sqlite', [sets[0]!, sets[1]!], () => null);
    const { text, values } = caught.sqlite!;
    const db = (sets[1]!.runtime.store as SqliteStore).database;
    console.log(`sqlite candidate query plan (${LARGE} pending):`);
    for (const row of db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...nextDue(values)) as {
      detail: string;
    }[])
      console.log(`  ${row.detail}`);
  } finally {
    for (const set of sets) await set.runtime.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(): Promise<void> {
  let cluster: PrivatePostgres | null = null;
  let url = process.env.MACHINE_ROUTES_BENCH_PG_URL;
  if (url === undefined) {
    cluster = await startPrivatePostgres();
    if (cluster === null)
      return console.log('postgres: no binaries for a private cluster, skipped');
    url = cluster.url;
  }
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const schemas = [SMALL, LARGE].map((count) => `bench_scale_timers_${count}_${process.pid}`);
  const sets: TimerSet[] = [];
  try {
    for (const [index, count] of [SMALL, LARGE].entries())
      sets.push(await open(`${url}?schema=${schemas[index]}`, count));
    await compare(
      cluster ? 'postgres (private cluster)' : 'postgres',
      [sets[0]!, sets[1]!],
      () => cluster?.cpuMicros() ?? null,
    );
    const { text, values } = caught.pg!;
    await admin.query(`SET search_path = ${schemas[1]}`);
    // Statistics as autovacuum keeps them (this cluster runs without it): the timer-fire rows
    // the deliveries wrote are counted, so the plan is the one a live database would use.
    await admin.query('ANALYZE');
    const { rows } = await admin.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`,
      nextDue(values ?? []),
    );
    console.log(`postgres candidate query plan (${LARGE} pending, ${DUE} due, after ANALYZE):`);
    for (const row of rows) console.log(`  ${row['QUERY PLAN']}`);
  } finally {
    for (const set of sets) await set.runtime.close();
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    cluster?.stop();
  }
}

console.log(`timers: ${SMALL} vs ${LARGE} pending, load average ${load()}`);
await sqlite();
await postgres();
console.log(`\nload average at end ${load()}`);
