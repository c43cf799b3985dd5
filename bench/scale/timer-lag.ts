/**
 * Timer lag with 100,000 timers pending and 1% of them due per minute, on the real clock:
 * `npx tsx bench/scale/timer-lag.ts`. Per store (SQLite file; PostgreSQL on a private cluster,
 * private-postgres.ts, or MACHINE_ROUTES_BENCH_PG_URL): PENDING instances waiting on a 100-minute
 * `after` timer are seeded with SQL so that one falls due every 60 ms from 20 s after the start
 * (1,000 a minute), a runtime with its in-process timer worker (default 500 ms sweep) runs for
 * DURATION seconds past the first deadline (and 2 s more, for the last ones), and the lag of each fire is its EXPIRE record's time
 * minus its deadline. Prints p50, p99 and max (the goal: p99 under 1 s).
 *
 * Environment: BENCH_PENDING (100000), BENCH_DURATION (60, seconds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { defineMachine } from '../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { startPrivatePostgres } from './private-postgres.js';

const PENDING = Number(process.env.BENCH_PENDING ?? 100_000);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 60);
const TIMER_S = 6000;
const SPACING_MS = 60;
const LEAD_MS = 20_000;

const machine = defineMachine({
  config: {
    id: 'bench_lag',
    initial: 'waiting',
    states: {
      waiting: { on: { EXPIRE: { target: 'expired', after: TIMER_S } } },
      expired: { type: 'final' },
    },
  },
});

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const pick = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function measure(label: string, url: string): Promise<void> {
  const store = await openStore(url, { migrate: true });
  const firstDue = Date.now() + LEAD_MS;
  const enteredMs = (i: string) =>
    `${(firstDue - TIMER_S * 1000) / 1000} + ${i} * ${SPACING_MS / 1000}`;
  if (store.kind === 'sqlite') {
    const db = (store as SqliteStore).database;
    const series = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${PENDING - 1})`;
    const at = `strftime('%Y-%m-%dT%H:%M:%fZ', ${enteredMs('i')}, 'unixepoch')`;
    const id = `'0WAT' || printf('%022d', i)`;
    db.transaction(() => {
      db.exec(`${series} INSERT INTO machine_instances (root_event_id, machine_id, machine_value, context,
        status, sequence_number, created_at, updated_at)
        SELECT ${id}, 'bench_lag', '["bench_lag.waiting"]', '{}', 'active', 1, ${at}, ${at} FROM n`);
      db.exec(`${series} INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
        SELECT ${id}, 'bench_lag', 'bench_lag.waiting', ${at} FROM n`);
    })();
    db.exec('ANALYZE');
  } else {
    const pool = (store as PostgresStore).pool;
    const series = `FROM generate_series(0, ${PENDING - 1}) AS i`;
    const at = `to_timestamp(${enteredMs('i')})`;
    const id = `'0WAT' || lpad(i::text, 22, '0')`;
    await pool.query(`INSERT INTO machine_instances (root_event_id, machine_id, machine_value, context,
      status, sequence_number, created_at, updated_at)
      SELECT ${id}, 'bench_lag', '["bench_lag.waiting"]', '{}', 'active', 1, ${at}, ${at} ${series}`);
    await pool.query(`INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
      SELECT ${id}, 'bench_lag', 'bench_lag.waiting', ${at} ${series}`);
    await pool.query('VACUUM ANALYZE');
  }
  await store.close();
  if (Date.now() > firstDue) throw new Error(`${label}: seeding took longer than ${LEAD_MS} ms`);
  const runtime = await MachineRuntime.open({
    databaseUrl: url,
    timers: [{ machine }],
    machines: [machine],
  });
  try {
    await new Promise((resolve) =>
      setTimeout(resolve, firstDue - Date.now() + DURATION_S * 1000 + 2000),
    );
  } finally {
    await runtime.close();
  }
  const reader = await openStore(url);
  const lags: number[] = [];
  let undelivered = 0;
  try {
    const due = Math.floor((DURATION_S * 1000) / SPACING_MS);
    for (let i = 0; i < due; i += 1) {
      const id = `0WAT${String(i).padStart(22, '0')}`;
      const fire = (await reader.history(id)).find((record) => record.type === 'EXPIRE');
      if (fire === undefined) undelivered += 1;
      else lags.push(Date.parse(fire.createdAt) - (firstDue + i * SPACING_MS));
    }
  } finally {
    await reader.close();
  }
  lags.sort((a, b) => a - b);
  console.log(
    `${label}: ${PENDING} pending, ${lags.length} fired in ${DURATION_S} s (${undelivered} due and not fired by the end); lag p50 ${pick(lags, 0.5)} ms, p99 ${pick(lags, 0.99)} ms, max ${lags.at(-1)} ms; load average ${load()}`,
  );
}

console.log(
  `timer lag: ${PENDING} pending, one due every ${SPACING_MS} ms (${60_000 / SPACING_MS} a minute), load average ${load()}`,
);
const dir = mkdtempSync(join(tmpdir(), 'mr-bench-lag-'));
try {
  await measure('sqlite', `sqlite:${join(dir, 'lag.db')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
let url = process.env.MACHINE_ROUTES_BENCH_PG_URL;
const cluster = url === undefined ? await startPrivatePostgres() : null;
url ??= cluster?.url;
if (url === undefined) console.log('postgres: no private cluster, skipped');
else {
  const admin = new pg.Client(url);
  await admin.connect();
  try {
    await measure('postgres', `${url}?schema=bench_lag`);
  } finally {
    await admin.query('DROP SCHEMA IF EXISTS bench_lag CASCADE').catch(() => {});
    await admin.end();
    cluster?.stop();
  }
}
