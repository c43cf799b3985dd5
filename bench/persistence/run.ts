/**
 * Persistence benchmark: `npx tsx bench/persistence/run.ts`.
 *
 * 1. Throughput: sequential sends of INC to one counter instance through `MachineRuntime`,
 *    beside a hand-written equivalent doing the same reads and writes with prepared statements
 *    on the same connection and durability settings (SQLite WAL + synchronous=NORMAL, as the
 *    store; PostgreSQL with the server's defaults): take the lock (one statement), read the
 *    instance row, then one transaction updating it (fenced on its sequence), inserting the
 *    history rows and deleting the lock. Batches alternate so drift hits both.
 * 2. History independence: per-event cost of sends to an instance with 10 history rows vs one
 *    with 10,000.
 *
 * Medians of several rounds. PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the
 * test database) answers; it works in a schema of its own, dropped at the end.
 */
import { getRandomValues } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { monotonicFactory } from 'ulid';
import { defineMachine } from '../../src/runtime/definition/index.js';
import { initialize, transition } from '../../src/runtime/interpreter/index.js';
import type { HistoryRecord, MachineSnapshot } from '../../src/runtime/interpreter/types.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import type { Store } from '../../src/runtime/persistence/store.js';

// Ids as good hand-written code makes them: one factory over a pooled crypto-random source (bare
// `ulid()` re-detects its source per call, and the default source costs a crypto call per
// character of each millisecond's first id). The runtime's lock owners are made the same way.
const pool = new Uint32Array(1024);
let poolIndex = pool.length;
const ulid = monotonicFactory(() => {
  if (poolIndex === pool.length) {
    getRandomValues(pool);
    poolIndex = 0;
  }
  return pool[poolIndex++]! / 0x1_0000_0000;
});

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';

const counter = defineMachine({
  config: {
    id: 'counter',
    initial: 'counting',
    context: { count: 0, owner: 'bench', tags: ['a', 'b'] },
    states: { counting: { on: { INC: { actions: 'increment' } } } },
  },
  behavior: {
    actions: {
      increment: ({ context }) => {
        context.count = Number(context.count) + 1;
      },
    },
  },
});

interface Plan {
  name: string;
  sendsPerRound: number;
  rounds: number;
  historySends: number;
}

/** One hand-written send: the same statements the runtime issues, without the runtime. */
type BaselineSend = (id: string, template: readonly HistoryRecord[]) => Promise<void>;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function timeRound(count: number, send: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await send();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

// The rows a hand-written send writes: the runtime's rows of one INC, with fresh ids.
function nextRecords(
  template: readonly HistoryRecord[],
  sequence: number,
  context: Record<string, unknown>,
) {
  const now = new Date().toISOString();
  return template.map((record, index) => ({
    ...record,
    id: ulid(),
    sequence: sequence + index + 1,
    createdAt: now,
    context: index === template.length - 1 ? context : null,
  }));
}

function sqliteBaseline(store: SqliteStore): BaselineSend {
  const db = store.database;
  const acquire =
    db.prepare(`INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
    VALUES (?, ?, ?, ?, 'send') ON CONFLICT (root_event_id) DO UPDATE SET owner_id = excluded.owner_id,
    acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, context = excluded.context
    WHERE machine_locks.expires_at < excluded.acquired_at`);
  const load = db.prepare(
    'SELECT machine_id, machine_value, context, status, sequence_number FROM machine_instances WHERE root_event_id = ?',
  );
  const update =
    db.prepare(`UPDATE machine_instances SET machine_value = ?, context = ?, status = ?,
    sequence_number = ?, updated_at = ? WHERE root_event_id = ? AND machine_id = ? AND sequence_number = ?`);
  const insert =
    db.prepare(`INSERT INTO machine_events (id, sequence_number, created_at, machine_id, root_event_id,
    source, type, payload, machine_value, context, version, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const release = db.prepare('DELETE FROM machine_locks WHERE root_event_id = ? AND owner_id = ?');
  const commit = db.transaction(
    (
      id: string,
      owner: string,
      row: { machine_id: string; sequence_number: number },
      records: HistoryRecord[],
      value: string,
      context: Record<string, unknown>,
    ) => {
      const last = records[records.length - 1]!;
      const changed = update.run(
        value,
        JSON.stringify(context),
        'active',
        last.sequence,
        last.createdAt,
        id,
        row.machine_id,
        row.sequence_number,
      );
      if (changed.changes !== 1) throw new Error('conflict');
      for (const r of records) {
        insert.run(
          r.id,
          r.sequence,
          r.createdAt,
          r.machineId,
          r.rootEventId,
          r.source,
          r.type,
          r.payload === null ? null : JSON.stringify(r.payload),
          JSON.stringify(r.value),
          r.context === null ? null : JSON.stringify(r.context),
          r.version,
          r.actor,
        );
      }
      release.run(id, owner);
    },
  );
  return async (id, template) => {
    const owner = ulid();
    const now = Date.now();
    if (
      acquire.run(id, owner, new Date(now).toISOString(), new Date(now + 60_000).toISOString())
        .changes !== 1
    ) {
      throw new Error('lock busy');
    }
    try {
      const row = load.get(id) as {
        machine_id: string;
        machine_value: string;
        context: string;
        sequence_number: number;
      };
      const context = JSON.parse(row.context) as Record<string, unknown>;
      context.count = Number(context.count) + 1;
      // The lock is released inside the commit transaction, as the runtime does.
      commit.immediate(
        id,
        owner,
        row,
        nextRecords(template, row.sequence_number, context),
        row.machine_value,
        context,
      );
    } catch (error) {
      release.run(id, owner);
      throw error;
    }
  };
}

function postgresBaseline(store: PostgresStore): BaselineSend {
  const pool = store.pool;
  const q = (client: pg.Pool | pg.PoolClient, name: string, text: string, values: unknown[]) =>
    client.query({ name: `bench_${name}`, text, values });
  return async (id, template) => {
    const owner = ulid();
    const locked = await q(
      pool,
      'acquire',
      `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
      VALUES ($1, $2, clock_timestamp(), clock_timestamp() + interval '60 seconds', 'send')
      ON CONFLICT (root_event_id) DO UPDATE SET owner_id = excluded.owner_id, acquired_at = excluded.acquired_at,
      expires_at = excluded.expires_at, context = excluded.context
      WHERE machine_locks.expires_at < excluded.acquired_at RETURNING owner_id`,
      [id, owner],
    );
    if (locked.rowCount !== 1) throw new Error('lock busy');
    try {
      const { rows } = await q(
        pool,
        'load',
        `SELECT machine_id, machine_value, context, status, sequence_number
        FROM machine_instances WHERE root_event_id = $1`,
        [id],
      );
      const row = rows[0] as {
        machine_id: string;
        machine_value: string[];
        context: Record<string, unknown>;
        sequence_number: number;
      };
      const context = { ...row.context, count: Number(row.context.count) + 1 };
      const records = nextRecords(template, row.sequence_number, context);
      const last = records[records.length - 1]!;
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const changed = await q(
          client,
          'update',
          `UPDATE machine_instances SET machine_value = $1, context = $2, status = $3,
          sequence_number = $4, updated_at = $5 WHERE root_event_id = $6 AND machine_id = $7 AND sequence_number = $8`,
          [
            JSON.stringify(row.machine_value),
            JSON.stringify(context),
            'active',
            last.sequence,
            last.createdAt,
            id,
            row.machine_id,
            row.sequence_number,
          ],
        );
        if (changed.rowCount !== 1) throw new Error('conflict');
        // One multi-row INSERT of exactly this many rows (the count is fixed per machine).
        const columns = 12;
        const values = records.flatMap((r) => [
          r.id,
          r.sequence,
          r.createdAt,
          r.machineId,
          r.rootEventId,
          r.source,
          r.type,
          r.payload === null ? null : JSON.stringify(r.payload),
          JSON.stringify(r.value),
          r.context === null ? null : JSON.stringify(r.context),
          r.version,
          r.actor,
        ]);
        const tuples = records.map(
          (_, i) =>
            `(${Array.from({ length: columns }, (_, c) => `$${i * columns + c + 1}`).join(', ')})`,
        );
        await q(
          client,
          `insert_${records.length}`,
          `INSERT INTO machine_events (id, sequence_number, created_at, machine_id,
          root_event_id, source, type, payload, machine_value, context, version, actor) VALUES ${tuples.join(', ')}`,
          values,
        );
        await q(
          client,
          'release',
          'DELETE FROM machine_locks WHERE root_event_id = $1 AND owner_id = $2',
          [id, owner],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    } catch (error) {
      await q(
        pool,
        'release',
        'DELETE FROM machine_locks WHERE root_event_id = $1 AND owner_id = $2',
        [id, owner],
      );
      throw error;
    }
  };
}

// Grows an instance's history to `length` rows with one synthetic commit (no replay involved).
async function growHistory(store: Store, snapshot: MachineSnapshot, length: number): Promise<void> {
  const now = new Date();
  const filler: HistoryRecord[] = Array.from({ length: length - snapshot.sequence }, (_, i) => ({
    id: ulid(),
    sequence: snapshot.sequence + i + 1,
    createdAt: now.toISOString(),
    machineId: snapshot.machineId,
    rootEventId: snapshot.id,
    source: 'internal',
    type: 'counter.bench.filler',
    payload: null,
    value: snapshot.value,
    context: i === length - snapshot.sequence - 1 ? snapshot.context : null,
    version: 1,
    actor: null,
  }));
  await store.commit({
    snapshot: { ...snapshot, sequence: length },
    history: filler,
    expectedSequence: snapshot.sequence,
    previousValue: snapshot.value,
    now,
  });
}

// Runs `a` and `b` in alternating batches, in ABBA order so neither always follows the other,
// so load from other processes and WAL checkpoints hit both alike; returns the seconds each spent.
async function interleaved(
  total: number,
  batch: number,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<[number, number]> {
  let timeA = 0;
  let timeB = 0;
  for (let done = 0, turn = 0; done < total; done += batch, turn++) {
    const n = Math.min(batch, total - done);
    if (turn % 2 === 0) {
      timeA += await timeRound(n, a);
      timeB += await timeRound(n, b);
    } else {
      timeB += await timeRound(n, b);
      timeA += await timeRound(n, a);
    }
  }
  return [timeA, timeB];
}

async function runBackend(plan: Plan, store: Store, baseline: BaselineSend): Promise<void> {
  const runtime = new MachineRuntime({ store });
  const viaRuntime = (await runtime.create(counter)).snapshot.id;
  const handWritten = (await runtime.create(counter)).snapshot.id;
  const template = (await runtime.send(counter, handWritten, { type: 'INC' })).history;
  const send = (id: string) => () => runtime.send(counter, id, { type: 'INC' });
  const sendHandWritten = () => baseline(handWritten, template);

  // Warm-up: statements prepared, JIT settled.
  await interleaved(Math.ceil(plan.sendsPerRound / 4), 25, send(viaRuntime), sendHandWritten);

  const runtimeRates: number[] = [];
  const baselineRates: number[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    const [a, b] = await interleaved(plan.sendsPerRound, 25, send(viaRuntime), sendHandWritten);
    runtimeRates.push(plan.sendsPerRound / a);
    baselineRates.push(plan.sendsPerRound / b);
  }
  const runtimeRate = median(runtimeRates);
  const baselineRate = median(baselineRates);
  // Paired per round (both ran interleaved in it), then the median: robust to rounds slowed down
  // by other processes.
  const speedRatio = median(runtimeRates.map((rate, i) => rate / baselineRates[i]!));

  // History independence: batches of 5 sends, alternating between an instance with 10 history
  // rows (a fresh one per batch, so it stays short) and one with 10,000 (fresh per round).
  const instanceWithHistory = async (length: number) => {
    const created = await runtime.create(counter);
    const first = await runtime.send(counter, created.snapshot.id, { type: 'INC' });
    await growHistory(store, first.snapshot, length);
    return created.snapshot.id;
  };
  const batch = 5;
  const shortCosts: number[] = [];
  const longCosts: number[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    const long = await instanceWithHistory(10_000);
    // Untimed: absorbs the WAL checkpoint the 10,000-row insert provokes at the next commits.
    await timeRound(20, send(long));
    let shortTime = 0;
    let longTime = 0;
    for (let done = 0, turn = 0; done < plan.historySends; done += batch, turn++) {
      const short = await instanceWithHistory(10);
      if (turn % 2 === 0) {
        shortTime += await timeRound(batch, send(short));
        longTime += await timeRound(batch, send(long));
      } else {
        longTime += await timeRound(batch, send(long));
        shortTime += await timeRound(batch, send(short));
      }
    }
    shortCosts.push(shortTime / plan.historySends);
    longCosts.push(longTime / plan.historySends);
  }
  const shortCost = median(shortCosts);
  const longCost = median(longCosts);
  const historyRatio = median(longCosts.map((cost, i) => cost / shortCosts[i]!));
  const rounds = (values: number[], format: (v: number) => string) => values.map(format).join(' ');

  console.log(
    `\n${plan.name} (${plan.rounds} rounds of ${plan.sendsPerRound} sends each, medians)`,
  );
  console.log(
    `  MachineRuntime.send      ${runtimeRate.toFixed(0).padStart(8)} sends/s   [${rounds(runtimeRates, (v) => v.toFixed(0))}]`,
  );
  console.log(
    `  hand-written transaction ${baselineRate.toFixed(0).padStart(8)} sends/s   [${rounds(baselineRates, (v) => v.toFixed(0))}]`,
  );
  console.log(
    `  ratio runtime/hand-written  ${speedRatio.toFixed(2)}x   (median of per-round ratios; goal >= 0.90x)`,
  );
  console.log(
    `  per event, history 10       ${(shortCost * 1e6).toFixed(1).padStart(8)} us   [${rounds(shortCosts, (v) => (v * 1e6).toFixed(0))}]`,
  );
  console.log(
    `  per event, history 10,000   ${(longCost * 1e6).toFixed(1).padStart(8)} us   [${rounds(longCosts, (v) => (v * 1e6).toFixed(0))}]`,
  );
  console.log(
    `  ratio 10,000/10              ${historyRatio.toFixed(2)}    (median of per-round ratios; goal <= 1.10)`,
  );
}

// Where the runtime's time goes besides the database: one `transition()` of the counter, as the
// first call of a millisecond and as a later one (history record ids are ULIDs; a generator
// drawing fresh randomness per character pays it on each millisecond's first id).
function interpreterCost(): void {
  let snapshot = initialize(counter).snapshot;
  let first = 0;
  let later = 0;
  let samples = 0;
  for (let pass = 0; pass < 2; pass++) {
    first = later = samples = 0;
    let last = Date.now();
    const end = last + 300;
    while (Date.now() < end) {
      const now = Date.now();
      if (now === last) continue;
      last = now;
      let start = performance.now();
      snapshot = transition(counter, snapshot, { type: 'INC' }).snapshot;
      first += performance.now() - start;
      start = performance.now();
      snapshot = transition(counter, snapshot, { type: 'INC' }).snapshot;
      later += performance.now() - start;
      samples++;
    }
  }
  console.log(
    `\nInterpreter (in memory, ${samples} samples): transition() ${((later / samples) * 1000).toFixed(1)} us,`,
  );
  console.log(
    `  first call of a millisecond ${((first / samples) * 1000).toFixed(1)} us (record id generation)`,
  );
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const started = Date.now();
interpreterCost();
const dir = mkdtempSync(join(tmpdir(), 'mr-bench-'));
try {
  const sqlite = new SqliteStore({ filename: join(dir, 'bench.db'), synchronous: 'NORMAL' });
  console.log(
    `SQLite ${join(dir, 'bench.db')}: journal_mode=${sqlite.database.pragma('journal_mode', { simple: true })}, synchronous=NORMAL`,
  );
  try {
    await runBackend(
      { name: 'SQLite file', sendsPerRound: 2000, rounds: 11, historySends: 400 },
      sqlite,
      sqliteBaseline(sqlite),
    );
  } finally {
    await sqlite.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (await postgresReachable()) {
  const schema = `mr_bench_${process.pid}`;
  const store = new PostgresStore({ connectionString: PG_URL, schema });
  try {
    await store.migrate();
    const settings = await store.pool.query<{ synchronous_commit: string }>(
      'SHOW synchronous_commit',
    );
    console.log(
      `\nPostgreSQL ${PG_URL} schema ${schema}: synchronous_commit=${settings.rows[0]?.synchronous_commit}`,
    );
    await runBackend(
      { name: 'PostgreSQL', sendsPerRound: 400, rounds: 9, historySends: 200 },
      store,
      postgresBaseline(store),
    );
  } finally {
    await store.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await store.close();
  }
} else {
  console.warn(`\nPostgreSQL at ${PG_URL} unreachable: PostgreSQL rounds skipped.`);
}
console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(1)} s`);
