/**
 * Timer benchmark: `npx tsx bench/timers/run.ts`.
 *
 * 1. Sweep cost: 100,000 instances waiting in a state with a 1,000 s `after` timer, entered
 *    10 ms apart, seeded with SQL. Each round moves a manual clock 10 s on, so 1% of the
 *    100,000 (1,000 instances) become due, and runs one sweep that delivers them. Reported:
 *    the sweep's time, store calls (each one query or one transaction; a delivery's commit is one
 *    transaction), candidate queries, per-delivery cost; and the idle sweep (nothing due: what
 *    every worker pays twice a second).
 * 2. Delivery delay: the in-process worker (default 500 ms interval, system clock) on
 *    instances with a 1 s timer created at random moments; delay = the EXPIRE record's time
 *    minus the deadline.
 *
 * Medians of the rounds. PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the test
 * database) answers; it works in a schema of its own, dropped at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ulid } from 'ulid';
import { ManualClock } from '../../src/runtime/clock.js';
import { defineMachine } from '../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../src/runtime/persistence/store.js';
import { sweepTimers } from '../../src/runtime/engine/timers/timer-sweep.js';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const INSTANCES = 100_000;
const SPACING_MS = 10;
const TIMER_S = 1_000;
const ROUNDS = 5;

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
const quick = defineMachine({
  config: {
    id: 'bench_quick',
    initial: 'waiting',
    states: {
      waiting: { on: { EXPIRE: { target: 'expired', after: 1 } } },
      expired: { type: 'final' },
    },
  },
});

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** Counts the store's calls by method (one query, or one transaction for `commit`). */
function counting(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, key) {
      // The target as receiver: getters of private fields (PostgresStore.pool) need it.
      const value = Reflect.get(target, key);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]) => {
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

async function seedSqlite(store: SqliteStore, base: number): Promise<void> {
  const db = store.database;
  const instance = db.prepare(`INSERT INTO machine_instances
    (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
    VALUES (?, 'bench_timer', '["bench_timer.waiting"]', '{}', 'active', 1, ?, ?)`);
  const state =
    db.prepare(`INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
    VALUES (?, 'bench_timer', 'bench_timer.waiting', ?)`);
  db.transaction(() => {
    for (let index = 0; index < INSTANCES; index += 1) {
      const id = ulid();
      const at = new Date(base + index * SPACING_MS).toISOString();
      instance.run(id, at, at);
      state.run(id, at);
    }
  })();
}

async function seedPostgres(store: PostgresStore, base: number): Promise<void> {
  const chunk = 10_000;
  for (let start = 0; start < INSTANCES; start += chunk) {
    const ids: string[] = [];
    const times: string[] = [];
    for (let index = start; index < start + chunk; index += 1) {
      ids.push(ulid());
      times.push(new Date(base + index * SPACING_MS).toISOString());
    }
    await store.pool.query(
      `INSERT INTO machine_instances
        (root_event_id, machine_id, machine_value, context, status, sequence_number, created_at, updated_at)
       SELECT id, 'bench_timer', '["bench_timer.waiting"]', '{}', 'active', 1, at, at
       FROM unnest($1::text[], $2::timestamptz[]) AS t(id, at)`,
      [ids, times],
    );
    await store.pool.query(
      `INSERT INTO machine_current_states (root_event_id, machine_id, state_id, state_entered_at)
       SELECT id, 'bench_timer', 'bench_timer.waiting', at FROM unnest($1::text[], $2::timestamptz[]) AS t(id, at)`,
      [ids, times],
    );
  }
  await store.pool.query('ANALYZE');
}

async function sweepCost(name: string, url: string): Promise<void> {
  const base = Date.parse('2026-01-01T00:00:00.000Z');
  const seedStore = await openStore(url, { migrate: true });
  const seedStart = performance.now();
  if (seedStore.kind === 'sqlite') await seedSqlite(seedStore as SqliteStore, base);
  else await seedPostgres(seedStore as PostgresStore, base);
  await seedStore.close();
  console.log(
    `${name}: seeded ${INSTANCES} instances in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
  );

  const { store, calls } = counting(await openStore(url));
  const runtime = new MachineRuntime({ store, machines: [waiting] });
  const clock = new ManualClock(base + TIMER_S * 1000 - 1);
  const registrations = [{ machine: waiting }];
  try {
    const idle: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const started = performance.now();
      const report = await sweepTimers({ context: runtime.context, registrations, clock });
      idle.push(performance.now() - started);
      if (report.delivered !== 0) throw new Error('idle sweep delivered');
    }
    const times: number[] = [];
    const callCounts: number[] = [];
    let last = null;
    for (let round = 0; round < ROUNDS; round += 1) {
      clock.advance((INSTANCES * SPACING_MS) / 100);
      calls.clear();
      const started = performance.now();
      const report = await sweepTimers({ context: runtime.context, registrations, clock });
      times.push(performance.now() - started);
      if (report.delivered !== INSTANCES / 100)
        throw new Error(
          `round ${round}: delivered ${report.delivered}, expected ${INSTANCES / 100}`,
        );
      callCounts.push([...calls.values()].reduce((sum, count) => sum + count, 0));
      last = { report, calls: Object.fromEntries(calls) };
    }
    const sweepMs = median(times);
    console.log(
      `${name}: idle sweep (0 due of ${INSTANCES}) median ${median(idle).toFixed(2)} ms, 1 query\n` +
        `${name}: sweep with 1% due (${INSTANCES / 100} of ${INSTANCES}) median ${sweepMs.toFixed(0)} ms ` +
        `(${((sweepMs * 1000) / (INSTANCES / 100)).toFixed(0)} us per delivered fire), ` +
        `store calls median ${median(callCounts)} (${(median(callCounts) / (INSTANCES / 100)).toFixed(1)} per fire); ` +
        `rounds ${times.map((time) => time.toFixed(0)).join(', ')} ms`,
    );
    console.log(`${name}: last round: ${JSON.stringify(last)}`);
  } finally {
    await runtime.close();
  }
}

async function deliveryDelay(name: string, url: string): Promise<void> {
  const runtime = await MachineRuntime.open({
    databaseUrl: url,
    migrate: true,
    timers: [{ machine: quick }],
  });
  try {
    const created: { id: string; due: number }[] = [];
    for (let index = 0; index < 30; index += 1) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 150));
      const { snapshot, history } = await runtime.create(quick);
      created.push({ id: snapshot.id, due: Date.parse(history[0]!.createdAt) + 1000 });
    }
    const delays: number[] = [];
    for (const { id, due } of created) {
      for (;;) {
        const fire = (await runtime.store.history(id)).find((record) => record.type === 'EXPIRE');
        if (fire !== undefined) {
          delays.push(Date.parse(fire.createdAt) - due);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    console.log(
      `${name}: delivery delay after the deadline (in-process worker, 500 ms interval, ${delays.length} fires): ` +
        `median ${median(delays)} ms, max ${Math.max(...delays)} ms`,
    );
  } finally {
    await runtime.close();
  }
}

async function postgresUrl(): Promise<{ url: string; drop: () => Promise<void> } | null> {
  const schema = `bench_timers_${process.pid}`;
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
  } catch {
    await client.end().catch(() => {});
    return null;
  }
  return {
    url: `${PG_URL}?schema=${schema}`,
    drop: async () => {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'mr-bench-timers-'));
try {
  await sweepCost('sqlite', `sqlite:${join(dir, 'sweep.db')}`);
  await deliveryDelay('sqlite', `sqlite:${join(dir, 'delay.db')}`);
  const postgres = await postgresUrl();
  if (postgres === null) console.log('postgres: not reachable, skipped');
  else {
    try {
      await sweepCost('postgres', postgres.url);
      await deliveryDelay('postgres', postgres.url);
    } finally {
      await postgres.drop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
