/**
 * Latency of the operator's reads (MachineOperations, docs/operations.md) as the store grows:
 * `npx tsx bench/operations/run.ts [count ...]` (default 10000 1000000).
 *
 * For each store (SQLite file, PostgreSQL when MACHINE_ROUTES_BENCH_PG_URL, default the test
 * database, answers), generates the data set of every count (data-set.ts), each in a fresh file
 * or schema, then times ROUNDS calls (after WARMUP) of each case on every count in alternation
 * (one call per count per round), so the host's load weighs on all sizes alike. The cases: the
 * first page of a leaf state, a page in the middle of it (by cursor), the first page of an
 * ancestor state (two leaves merged), the first page of the newest-first list, and a history
 * page in the middle of a 1,000-record instance. Prints the
 * median milliseconds, then each one's ratio largest/smallest count (the goal: within 3x).
 * The files and schemas are deleted after each store's measurements.
 *
 * Environment: BENCH_ROUNDS (default 101), BENCH_WARMUP (default 10), BENCH_LIMIT (page size,
 * default 50).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineOperations } from '../../src/runtime/engine/operations/machine-operations.js';
import { encodeCursor } from '../../src/runtime/engine/operations/cursors.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import type { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../src/runtime/persistence/store.js';
import {
  benchMachine,
  generatePostgres,
  generateSqlite,
  instanceId,
  LONG_HISTORY,
  longHistoryId,
} from './data-set.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 101);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 10);
const LIMIT = Number(process.env.BENCH_LIMIT ?? 50);
const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const counts = process.argv.slice(2).map(Number);
if (counts.length === 0) counts.push(10_000, 1_000_000);

type Case = { name: string; run: (operations: MachineOperations) => Promise<unknown> };

function cases(count: number): Case[] {
  // The middle of bench.group.s2's list: instance i has i % 5 === 2; its entry time is
  // created + (i % 7) * 30 s, so a cursor at the middle instance's own key lands mid-list.
  const middle = Math.floor(count / 2 / 5) * 5 + 2;
  const entered = new Date(
    Date.parse('2026-01-01T00:00:00.000Z') + (middle + (middle % 7) * 30) * 1000,
  ).toISOString();
  const stateCursor = encodeCursor(
    { kind: 'instances', machineId: 'bench', order: 'state' },
    { time: entered, rootEventId: instanceId(middle) },
  );
  const long = longHistoryId(count);
  const historyCursor = encodeCursor(
    { kind: 'history', instanceId: long, order: 'asc' },
    Math.floor(LONG_HISTORY / 2),
  );
  return [
    { name: 'state, first page', run: (o) => o.list('bench', { state: 'group.s2', limit: LIMIT }) },
    {
      name: 'state, middle page',
      run: (o) => o.list('bench', { state: 'group.s2', limit: LIMIT, cursor: stateCursor }),
    },
    { name: 'ancestor, first page', run: (o) => o.list('bench', { state: 'group', limit: LIMIT }) },
    { name: 'newest, first page', run: (o) => o.list('bench', { limit: LIMIT }) },
    {
      name: 'history, middle page',
      run: (o) => o.history('bench', long, { limit: LIMIT, cursor: historyCursor }),
    },
  ];
}

/** One generated data set, open: its operations and how to delete it. */
interface DataSet {
  count: number;
  operations: MachineOperations;
  close(): Promise<void>;
}

function dataSet(store: Store, count: number, drop: () => Promise<void>): DataSet {
  const runtime = new MachineRuntime({ store, machines: [benchMachine] });
  return {
    count,
    operations: new MachineOperations({ runtime, machines: [benchMachine] }),
    async close() {
      await runtime.close();
      await drop();
    },
  };
}

/**
 * Medians per data set and case, the sizes measured in alternation: round r times one call on
 * each data set (the order reversed every other round), so a change of the shared host's load
 * during the run weighs on every size alike and the ratio compares like with like.
 */
async function measure(sets: readonly DataSet[]): Promise<Map<number, Map<string, number>>> {
  const medians = new Map(sets.map((set) => [set.count, new Map<string, number>()]));
  const names = cases(sets[0]!.count).map((entry) => entry.name);
  for (const name of names) {
    const runs = sets.map((set) => {
      const { run } = cases(set.count).find((entry) => entry.name === name)!;
      return { set, run: () => run(set.operations), times: [] as number[] };
    });
    for (const { run } of runs) {
      const page = (await run()) as { items: unknown[] };
      if (page.items.length !== LIMIT) throw new Error(`${name}: ${page.items.length} rows`);
      for (let index = 0; index < WARMUP; index += 1) await run();
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const entry of round % 2 === 0 ? runs : [...runs].reverse()) {
        const start = performance.now();
        await entry.run();
        entry.times.push(performance.now() - start);
      }
    }
    for (const { set, times } of runs) {
      times.sort((a, b) => a - b);
      medians.get(set.count)!.set(name, times[Math.floor(times.length / 2)]!);
    }
  }
  return medians;
}

async function sqlite(count: number): Promise<DataSet> {
  const dir = mkdtempSync(join(tmpdir(), 'mr-bench-operations-'));
  const store = (await openStore(`sqlite:${join(dir, 'bench.db')}`)) as SqliteStore;
  const started = performance.now();
  generateSqlite(store, count);
  console.log(
    `sqlite ${count}: generated in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return dataSet(store, count, async () => rmSync(dir, { recursive: true, force: true }));
}

async function postgres(count: number): Promise<DataSet | null> {
  const schema = `bench_operations_${process.pid}_${count}`;
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
  } catch {
    await client.end().catch(() => {});
    return null;
  }
  const drop = async () => {
    await client.query(`DROP SCHEMA ${schema} CASCADE`);
    await client.end();
  };
  try {
    const store = (await openStore(`${PG_URL}?schema=${schema}`, {
      migrate: true,
    })) as PostgresStore;
    const started = performance.now();
    await generatePostgres(store, count);
    console.log(
      `postgres ${count}: generated in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    return dataSet(store, count, drop);
  } catch (error) {
    await drop();
    throw error;
  }
}

console.log(`rounds ${ROUNDS}, page ${LIMIT} rows, load average ${loadavg()[0]!.toFixed(2)}`);
const results = new Map<string, Map<number, Map<string, number>>>();
for (const [label, open] of [
  ['sqlite', sqlite],
  ['postgres', postgres],
] as const) {
  // Every size of one store at once (deleted after), measured in alternation.
  const sets: DataSet[] = [];
  try {
    for (const count of counts) {
      const set = await open(count);
      if (set === null) break;
      sets.push(set);
    }
    if (sets.length < counts.length) {
      console.log(`${label}: not reachable, skipped`);
      continue;
    }
    const before = loadavg()[0]!.toFixed(2);
    results.set(label, await measure(sets));
    console.log(`${label}: measured at load average ${before} to ${loadavg()[0]!.toFixed(2)}`);
  } finally {
    for (const set of sets) await set.close();
  }
}

const first = counts[0]!;
const last = counts[counts.length - 1]!;
console.log(`\nmedian ms per call (${first} -> ${last} instances, ratio)`);
for (const [label, byCount] of results) {
  for (const name of byCount.get(first)!.keys()) {
    const small = byCount.get(first)!.get(name)!;
    const large = byCount.get(last)!.get(name)!;
    console.log(
      `${label.padEnd(9)} ${name.padEnd(22)} ${small.toFixed(3).padStart(8)} ${large.toFixed(3).padStart(8)}  ${(large / small).toFixed(2)}x`,
    );
  }
}
