/**
 * Flat as the data grows: the per-operation cost of a send, a create, a read and a history page
 * at 1,000 instances against 1,000,000 (10 history records each: 10,000 against 10,000,000
 * rows), on SQLite and PostgreSQL, in one run: `npx tsx bench/scale/growth.ts`.
 *
 * Both data sets are generated (data-set.ts) side by side, the small and the large one in two
 * SQLite files and two schemas of a private PostgreSQL cluster (private-postgres.ts; or the server
 * of MACHINE_ROUTES_BENCH_PG_URL), and deleted at the end. Then ROUNDS rounds alternate the two
 * sizes (order swapped each round); in each, OPS operations of each kind, one at a time, through
 * `MachineRuntime` (send TICK and read on instances drawn at random over the whole set, so the
 * large set's pages are not all cached; create adds instances). Reported per operation, medians
 * of the rounds: wall time, this process's CPU time (for SQLite the whole cost), and on the
 * private cluster the database's CPU time (every process of the cluster); and each one's ratio
 * large / small (the goal: within 1.2x).
 *
 * Environment: BENCH_SMALL (1000), BENCH_LARGE (1000000), BENCH_HISTORY (records per instance,
 * 10), BENCH_ROUNDS (7), BENCH_OPS (200), BENCH_STORES (sqlite,postgres).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { generatePostgres, generateSqlite, scaleId, scaleMachine } from './data-set.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

const SMALL = Number(process.env.BENCH_SMALL ?? 1000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const HISTORY = Number(process.env.BENCH_HISTORY ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const OPS = Number(process.env.BENCH_OPS ?? 200);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const OPERATIONS = ['send', 'create', 'read', 'history'] as const;
type Operation = (typeof OPERATIONS)[number];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

interface Sized {
  count: number;
  runtime: MachineRuntime;
}

/** Per operation: wall, process CPU and database CPU per call, one entry per round. */
type Figures = Map<Operation, { wall: number[]; cpu: number[]; db: number[] }>;

async function runOps(set: Sized, operation: Operation, dbMicros: () => number | null) {
  const { runtime, count } = set;
  const random = () => scaleId(Math.floor(Math.random() * count));
  const cpuBefore = cpuMicros();
  const dbBefore = dbMicros();
  const started = performance.now();
  for (let index = 0; index < OPS; index += 1) {
    if (operation === 'send') await runtime.send(scaleMachine, random(), { type: 'TICK' });
    else if (operation === 'create') await runtime.create(scaleMachine);
    else if (operation === 'read') await runtime.read(scaleMachine, random());
    else await runtime.history(scaleMachine, random(), { limit: 10 });
  }
  const wall = ((performance.now() - started) * 1000) / OPS;
  const dbAfter = dbMicros();
  return {
    wall,
    cpu: (cpuMicros() - cpuBefore) / OPS,
    db: dbBefore === null || dbAfter === null ? NaN : (dbAfter - dbBefore) / OPS,
  };
}

async function compare(label: string, sets: [Sized, Sized], dbMicros: () => number | null) {
  const figures = new Map<number, Figures>(
    sets.map((set) => [
      set.count,
      new Map(OPERATIONS.map((op) => [op, { wall: [], cpu: [], db: [] }])),
    ]),
  );
  // A warm-up round, not counted: statement caches, the first lock-row send of each runtime.
  for (const set of sets) for (const op of OPERATIONS) await runOps(set, op, dbMicros);
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? sets : [sets[1], sets[0]];
    for (const set of order) {
      for (const op of OPERATIONS) {
        const result = await runOps(set, op, dbMicros);
        const entry = figures.get(set.count)!.get(op)!;
        entry.wall.push(result.wall);
        entry.cpu.push(result.cpu);
        entry.db.push(result.db);
      }
    }
  }
  console.log(
    `\n${label}: us per operation, medians of ${ROUNDS} rounds of ${OPS} (${SMALL} -> ${LARGE} instances), load average ${load()}`,
  );
  console.log(
    'operation   wall small  wall large  ratio   cpu small  cpu large  ratio   db small  db large  ratio',
  );
  for (const op of OPERATIONS) {
    const small = figures.get(sets[0].count)!.get(op)!;
    const large = figures.get(sets[1].count)!.get(op)!;
    const cells: string[] = [];
    for (const key of ['wall', 'cpu', 'db'] as const) {
      const a = median(small[key]);
      const b = median(large[key]);
      cells.push(
        `${a.toFixed(0).padStart(9)}  ${b.toFixed(0).padStart(9)}  ${Number.isNaN(a) ? '   - ' : `${(b / a).toFixed(2)}x`}`,
      );
    }
    console.log(`${op.padEnd(10)}  ${cells.join('  ')}`);
  }
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mr-bench-growth-'));
  const sets: Sized[] = [];
  try {
    for (const count of [SMALL, LARGE]) {
      const file = join(dir, `${count}.db`);
      const store = (await openStore(`sqlite:${file}`, { migrate: true })) as SqliteStore;
      const started = performance.now();
      generateSqlite(store, count, HISTORY);
      console.log(
        `sqlite ${count} instances, ${count * HISTORY} history rows: generated in ${((performance.now() - started) / 1000).toFixed(1)} s, ${(statSync(file).size / 1e6).toFixed(0)} MB`,
      );
      sets.push({ count, runtime: new MachineRuntime({ store, machines: [scaleMachine] }) });
    }
    await compare('sqlite', [sets[0]!, sets[1]!], () => null);
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
    if (cluster === null) {
      console.log('postgres: no binaries for a private cluster, skipped');
      return;
    }
    url = cluster.url;
  }
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const sets: Sized[] = [];
  const schemas: string[] = [];
  try {
    for (const count of [SMALL, LARGE]) {
      const schema = `bench_growth_${count}_${process.pid}`;
      schemas.push(schema);
      const store = (await openStore(`${url}?schema=${schema}`, {
        migrate: true,
      })) as PostgresStore;
      const started = performance.now();
      await generatePostgres(store, count, HISTORY);
      const { rows } = await admin.query<{ size: string }>(
        `SELECT (sum(pg_total_relation_size(c.oid)) / 1e6)::int::text AS size FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema],
      );
      console.log(
        `postgres ${count} instances, ${count * HISTORY} history rows: generated in ${((performance.now() - started) / 1000).toFixed(1)} s, ${rows[0]!.size} MB`,
      );
      sets.push({ count, runtime: new MachineRuntime({ store, machines: [scaleMachine] }) });
    }
    await compare(
      cluster ? 'postgres (private cluster)' : 'postgres (shared server: no database CPU)',
      [sets[0]!, sets[1]!],
      () => cluster?.cpuMicros() ?? null,
    );
  } finally {
    for (const set of sets) await set.runtime.close();
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    cluster?.stop();
  }
}

console.log(
  `growth: ${SMALL} vs ${LARGE} instances, ${HISTORY} history records each; load average ${load()}`,
);
if (STORES.includes('sqlite')) await sqlite();
if (STORES.includes('postgres')) await postgres();
console.log(`\nload average at end ${load()}`);
